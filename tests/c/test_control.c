/* If: outer-scope values bound as inputs (ir/subgraph.h), folding a constant
 * condition into the taken branch (passes/fold_control.h), and the If
 * kernel when the condition is known only at run time. */
#include "graph_build.h"
#include "ir/subgraph.h"
#include "passes/fold_control.h"
#include "runtime/executor.h"

static const int64_t two[1] = {2}, unknown[1] = {-1};

/* A branch computing `op`(x) into its output, or passing x itself through
 * when op is NULL. */
static wq_graph *branch(const char *op) {
  wq_graph *s = wq_graph_new();
  int x = wq_graph_add_tensor(s, "x"); /* read from the enclosing graph */
  int out = x;
  if (op) {
    wq_error err;
    out = add_tensor(s, op, WQ_DT_FLOAT, 1, two, NULL);
    add_node(s, "", op, &x, 1, out, NULL, 17, &err);
  }
  s->outputs = malloc(sizeof(int));
  s->outputs[0] = out;
  s->n_outputs = 1;
  return s;
}

/* y = If(cond, then: then_op(x), else: else_op(x)); cond constant when
 * value >= 0, else a graph input. Returns the If's node index. */
static wq_graph *if_graph(int value, const char *then_op, const char *else_op) {
  wq_graph *g = wq_graph_new();
  int x = add_tensor(g, "x", WQ_DT_FLOAT, 1, two, NULL);
  unsigned char *c = NULL;
  if (value >= 0) {
    c = malloc(1);
    *c = (unsigned char)value;
  }
  int cond = add_tensor(g, "cond", WQ_DT_BOOL, 0, two, c);
  int y = add_tensor(g, "y", WQ_DT_FLOAT, 1, unknown, NULL);
  g->tensors[x].is_input = true;
  g->tensors[cond].is_input = value < 0;
  g->tensors[y].is_output = true;
  g->inputs = malloc(2 * sizeof(int));
  g->inputs[g->n_inputs++] = x;
  if (value < 0)
    g->inputs[g->n_inputs++] = cond;
  g->outputs = malloc(sizeof(int));
  g->outputs[g->n_outputs++] = y;
  wq_node *n = wq_graph_add_node(g);
  n->name = wq_strdup("the_if");
  n->op_type = wq_strdup("If");
  n->domain = wq_strdup("");
  n->opset = 17;
  n->inputs = malloc(sizeof(int));
  n->inputs[n->n_inputs++] = cond;
  n->outputs = malloc(sizeof(int));
  n->outputs[n->n_outputs++] = y;
  n->attrs = calloc(2, sizeof(wq_attr));
  n->attrs[0] =
      (wq_attr){.name = wq_strdup("then_branch"), .type = WQ_ATTR_GRAPH, .g = branch(then_op)};
  n->attrs[1] =
      (wq_attr){.name = wq_strdup("else_branch"), .type = WQ_ATTR_GRAPH, .g = branch(else_op)};
  n->n_attrs = 2;
  return g;
}

static void test_bind_and_fold(void) {
  static const float xs[2] = {-1.5f, 2.0f};
  for (int value = 0; value < 2; value++) {
    wq_error err;
    wq_graph *g = if_graph(value, "Relu", "Neg");
    CHECK(wq_graph_bind_captures(g, &err) == WQ_OK);
    const wq_node *n = &g->nodes[0];
    CHECK(n->n_inputs == 2 && n->inputs[1] == wq_graph_find_tensor(g, "x"));
    const wq_graph *t = wq_node_attr(n, "then_branch")->g;
    CHECK(t->n_inputs == 1 && strcmp(t->tensors[t->inputs[0]].name, "x") == 0);
    CHECK(wq_graph_resolve_ops(g, &err) == WQ_OK);
    wq_fold_control_stats stats;
    CHECK(wq_pass_fold_control(g, 1, &stats, &err) == WQ_OK);
    CHECK(stats.ifs_inlined == 1 && g->n_nodes == 1);
    const wq_node *k = &g->nodes[0];
    CHECK(strcmp(k->op_type, value ? "Relu" : "Neg") == 0);
    CHECK(k->inputs[0] == wq_graph_find_tensor(g, "x") && k->outputs[0] == g->outputs[0]);
    wq_value in = wq_tensor_value(&g->tensors[k->inputs[0]]), out;
    in.data = (void *)xs;
    CHECK(wq_run_node(k, &in, &out, &err) == WQ_OK);
    const float *y = out.data;
    CHECK(y[0] == (value ? 0.0f : 1.5f) && y[1] == (value ? 2.0f : -2.0f));
    free(out.data);
    wq_graph_free(g);
  }
  /* A branch handing back the outer x itself is left to the If kernel. */
  wq_error err;
  wq_graph *g = if_graph(1, NULL, "Neg");
  CHECK(wq_graph_bind_captures(g, &err) == WQ_OK && wq_graph_resolve_ops(g, &err) == WQ_OK);
  wq_fold_control_stats stats;
  CHECK(wq_pass_fold_control(g, 1, &stats, &err) == WQ_OK && stats.ifs_inlined == 0);
  const wq_node *n = &g->nodes[0];
  CHECK(g->n_nodes == 1 && wq_node_is(n, WQ_OPID(if)));
  wq_value in[2] = {wq_tensor_value(&g->tensors[n->inputs[0]]),
                    wq_tensor_value(&g->tensors[n->inputs[1]])},
           out;
  in[1].data = (void *)xs;
  CHECK(wq_run_node(n, in, &out, &err) == WQ_OK && out.data &&
        memcmp(out.data, xs, sizeof xs) == 0);
  free(out.data);
  wq_graph_free(g);
}

static void test_run_time_condition(void) {
  static const float xs[2] = {-1.5f, 2.0f};
  wq_error err;
  wq_graph *g = if_graph(-1, "Relu", "Neg");
  CHECK(wq_graph_bind_captures(g, &err) == WQ_OK && wq_graph_resolve_ops(g, &err) == WQ_OK);
  wq_fold_control_stats stats;
  CHECK(wq_pass_fold_control(g, 1, &stats, &err) == WQ_OK && stats.ifs_inlined == 0);
  const wq_node *n = &g->nodes[0];
  CHECK(wq_node_is(n, WQ_OPID(if)));
  /* Before the condition is known the If's shape is not (as declared). */
  CHECK(g->tensors[g->outputs[0]].dtype == WQ_DT_FLOAT && g->tensors[g->outputs[0]].dims[0] == -1);
  for (int value = 0; value < 2; value++) {
    unsigned char c = (unsigned char)value;
    wq_value in[2] = {wq_tensor_value(&g->tensors[n->inputs[0]]),
                      wq_tensor_value(&g->tensors[n->inputs[1]])},
             out;
    in[0].data = &c;
    in[1].data = (void *)xs;
    CHECK(wq_run_node(n, in, &out, &err) == WQ_OK);
    const float *y = out.data;
    CHECK(y && y[0] == (value ? 0.0f : 1.5f) && y[1] == (value ? 2.0f : -2.0f));
    free(out.data);
  }
  /* A condition of two elements is refused, naming the node. */
  unsigned char c2[2] = {1, 0};
  wq_value in[2] = {wq_tensor_value(&g->tensors[n->inputs[0]]),
                    wq_tensor_value(&g->tensors[n->inputs[1]])},
           out;
  in[0].rank = 1;
  in[0].dims[0] = 2;
  in[0].data = c2;
  in[1].data = (void *)xs;
  CHECK(wq_run_node(n, in, &out, &err) != WQ_OK && strstr(err.message, "condition"));
  wq_graph_free(g);
}

int main(void) {
  test_bind_and_fold();
  test_run_time_condition();
  WQ_TEST_END();
}
