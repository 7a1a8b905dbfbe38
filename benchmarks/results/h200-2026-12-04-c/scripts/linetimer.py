"""Instrument top-level statements of functions with perf_counter_ns checkpoints."""
import ast, inspect, textwrap, time
pc = time.perf_counter_ns
REC = []
def _CK(tag):
    REC.append((tag, pc()))
def instrument(owner, name, label):
    fn = getattr(owner, name)
    fn = getattr(fn, "__wrapped__", fn)
    src = textwrap.dedent(inspect.getsource(fn))
    tree = ast.parse(src)
    f = tree.body[0]
    f.decorator_list = []
    first = fn.__code__.co_firstlineno
    def ck(tag):
        return ast.Expr(ast.Call(ast.Name("_CK", ast.Load()), [ast.Constant(tag)], []))
    body = [ck(f"{label}:start")]
    for st in f.body:
        if isinstance(st, ast.Return):
            body.append(ck(f"{label}:{first + st.lineno - 1}<ret"))
            body.append(st)
        else:
            body.append(st)
            body.append(ck(f"{label}:{first + st.lineno - 1}"))
    f.body = body
    ast.fix_missing_locations(tree)
    g = fn.__globals__
    g["_CK"] = _CK
    ns = {}
    # closures: compile inside the module's globals; free vars (e.g. __class__) are not supported
    exec(compile(tree, fn.__code__.co_filename, "exec"), g, ns)
    new = ns[f.name]
    setattr(owner, name, new)
    return new
def report(t0, t1, min_us=1.5):
    out, prev = [], t0
    for tag, t in REC:
        d = (t - prev) / 1e3
        if d >= min_us:
            out.append(f"{tag}={d:.0f}")
        prev = t
    return " ".join(out)
