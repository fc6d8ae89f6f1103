"""Bulk's figure: o_s(n) and the store and get round trips against size (Culler et al. Fig. 12)."""
import logpb_plots as lp  # analysis/logpb_plots.py, which loads this file


def figures(doc, kind, path_for):
    if kind != "bulk":
        return []
    lp.draw_sizes(doc, path_for("bulk"), [("o_s(n) from the signature", lp.per_size_series(doc, "o_s")),
                                          ("T(n) store round trip", lp.per_size_series(doc, "rtt")),
                                          ("get round trip", lp.per_size_series(doc, "get_rtt"))],
                  "µs", "Bulk transfer (Culler et al. Fig. 12)", logy=True)
    return [("Bulk: o_s(n) and T(n)", path_for("bulk"))]
