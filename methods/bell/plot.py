"""Bell et al. section 4's figures: the flood's time per message against size with the g + G n fit, and the
overheads the CPU-overlap test reads off."""
import logpb_plots as lp  # analysis/logpb_plots.py, which loads this file


def figures(doc, kind, path_for):
    if kind == "flood":
        p = doc["parameters"]
        g, G = p.get("g", {}).get("value_ns"), p.get("G", {}).get("value_ns")
        fit = (lambda n: g + G * n) if g is not None and G is not None else None
        lp.draw_sizes(doc, path_for("flood"), [("flood time per message", lp.per_size_series(doc, "g"))], "µs",
                      "Flood g(n) (Bell et al. §4)", logy=True, fit=fit)
        return [("Flood: time per message against size", path_for("flood"))]
    if kind == "overlap":
        series = [("o_s_completion(n)", lp.per_size_series(doc, "o_s_completion")),
                  ("o_r_stream(n)", lp.per_size_series(doc, "o_r_stream"))]
        lp.draw_sizes(doc, path_for("overlap"), series, "µs", "CPU overlap (Bell et al. §4)", logy=True)
        return [("overlap: parameters against size", path_for("overlap"))]
    return []
