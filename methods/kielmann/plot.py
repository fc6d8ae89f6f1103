"""Kielmann et al.'s parameterized LogP against size: o_s(m), o_r(m) and g(m), fast and at saturation."""
import logpb_plots as lp  # analysis/logpb_plots.py, which loads this file


def figures(doc, kind, path_for):
    if kind != "kielmann":
        return []
    series = [("o_s(n)", lp.per_size_series(doc, "o_s")), ("o_r(n)", lp.per_size_series(doc, "o_r")),
              ("g(m) fast", lp.per_size_series(doc, "g")),
              ("g(m) saturation", lp.per_size_series(doc, "g_saturation"))]
    lp.draw_sizes(doc, path_for("kielmann"), series, "µs", "Kielmann et al. parameterized LogP", logy=True)
    return [("kielmann: parameters against size", path_for("kielmann"))]
