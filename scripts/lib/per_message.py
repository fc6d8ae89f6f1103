"""What logpbench adds to one message over a bare loop on the same transport, and what that is made of (issue 39
item 3): its AM layer (meta.harness, a send and a receive over a null NI, measured in the same run) and the
rest, the transport's own datapath. One message is half a round trip. Every comparison script splits its
rounds so and prints the medians on a line of its own:
  PROG per message: +X ns over the bare loop, of which the AM layer A ns (meta.harness send + recv) and the
  T transport's datapath +D ns
and records them under per_message_ns in its JSON, with RULE beside them."""
import statistics

KEYS = ("over_bare", "am_layer", "transport_datapath")


def rule(bare="the bare loop's"):
    """How the figures are made, for the JSON beside them; `bare` names the reference's one-way time."""
    return (f"ns per message (half a round trip): over_bare = logpbench's one-way time - {bare}; am_layer = "
            "meta.harness send_ns + recv_ns of logpbench's run; transport_datapath = over_bare - am_layer; medians "
            "over the rounds kept")


RULE = rule()


def am_layer_ns(doc):
    """The AM layer's cost of one send and one receive (meta.harness) in the run `doc` describes, or None."""
    h = (doc or {}).get("meta", {}).get("harness") or {}
    try:
        return h["send_ns"]["value_ns"] + h["recv_ns"]["value_ns"]
    except (KeyError, TypeError):
        return None


def split(lpb_one_way, bare_one_way, am):
    """One round's split; None for a figure whose inputs are missing."""
    over = lpb_one_way - bare_one_way if lpb_one_way is not None and bare_one_way is not None else None
    return {"over_bare": over, "am_layer": am,
            "transport_datapath": over - am if over is not None and am is not None else None}


def medians(rows, keys=KEYS):
    """The median of each key over `rows` (dicts as split gives), leaving out None; None where none is left."""
    out = {}
    for k in keys:
        xs = [r[k] for r in rows if r.get(k) is not None]
        out[k] = statistics.median(xs) if xs else None
    return out


def text(prog, m, transport, bare="the bare loop"):
    """The summary line of medians `m`."""
    def f(x, sign="+"):
        return "n/a" if x is None else f"{x:{sign}.1f}"

    return (f"{prog} per message: {f(m['over_bare'])} ns over {bare}, of which the AM layer {f(m['am_layer'], '')} ns "
            f"(meta.harness send + recv) and the {transport} transport's datapath {f(m['transport_datapath'])} ns")
