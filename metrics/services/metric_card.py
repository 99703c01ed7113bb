"""A metric card: everything the project knows about one metric on one campaign, in one place.

Its output-level figures against the campaign's humans (today's meta-evaluation: the LENS authors' tau-like
per category, Pearson/Spearman against the mean z, or per aspect, with intervals; pairwise accuracy with tie
calibration and its significance cluster where the meta-evaluation gives them), its system-level figures
with its significance cluster per figure (where the meta-evaluation gives them), its perturbation
sensitivity and sanity checks (the last APPLS testbed run that scored it) and its signature.

:func:`metric_card_from_result` builds the card from a meta-evaluation result and does nothing else, so the
command (``meta_evaluate --metric NAME --format table``), the API (``GET
/api/campaigns/<slug>/metrics/<metric>/card/``) and the research page (``/research/campaigns/<slug>/metrics/
<metric>/``) show the same figures; the last two read them from :func:`campaign_meta_evaluate_stored`, the
function behind the metrics API and the dashboard's metrics panel.  :func:`metric_card_text` is its text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from annotation.models import Campaign
from core.budgets import N_BOOT_DEFAULT
from core.errors import NotFound, ServiceError
from metrics.perturb.sanity import SANITY_CHECKS, sanity_text
from metrics.services.meta_evaluation import campaign_meta_evaluate_stored
from metrics.services.metric_registry import metric_get, metric_stale

OUTPUT_KEYS = ("kendall", "kendall_ci", "pairs", "pearson", "pearson_ci", "spearman", "spearman_ci",
               "correlation_outputs", "n", "acc_eq")
"""The output-level entries of a metric's meta-evaluation that the card carries (those present)."""

SYSTEM_FIGURES = ("pearson", "kendall", "accuracy", "acc_eq")


def _cluster_of(clusters: Mapping[str, Any] | None, name: str) -> dict[str, Any] | None:
    """The metric's place in a significance ranking: its cluster (1 = the best group), how many clusters
    there are, who shares its cluster, and which test made them."""
    if not clusters or name not in (clusters.get("rank") or {}):
        return None
    rank = clusters["rank"]
    return {"cluster": rank[name], "clusters": max(rank.values()), "metrics": len(rank),
            "with": [m for m in clusters.get("order", []) if rank.get(m) == rank[name] and m != name],
            "figure": clusters.get("figure"), "test": clusters.get("test"),
            "correction": clusters.get("correction"), "alpha": clusters.get("alpha")}


def _system_section(result: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    system = result.get("system")
    if not system or name not in (system.get("metrics") or {}):
        return None
    mine = system["metrics"][name]
    humans = list(system.get("humans") or [])
    return {
        "systems": list(system.get("systems") or []),
        "humans": humans,
        "means": {h: dict((mine.get("means") or {}).get(h) or {}) for h in humans},
        "human_means": {h: dict((system.get("human_means") or {}).get(h) or {}) for h in humans},
        "mean_rows": {h: [{"system": s, "metric": ((mine.get("means") or {}).get(h) or {}).get(s),
                           "human": ((system.get("human_means") or {}).get(h) or {}).get(s)}
                          for s in system.get("systems") or []] for h in humans},
        "figures": {h: {f: mine[h][f] for f in SYSTEM_FIGURES if f in (mine.get(h) or {})} for h in humans},
        "clusters": {h: {f: _cluster_of(c, name) for f, c in ((system.get("clusters") or {}).get(h) or {}).items()}
                     for h in humans},
        "williams": {h: [row for row in (system.get("williams") or {}).get(h) or []
                         if name in (row.get("metric_a"), row.get("metric_b"))] for h in humans},
    }


def metric_card_from_result(result: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The card of metric ``name`` from a meta-evaluation result (``campaign_meta_evaluate`` or its stored
    variant).

    Returns:
        ``{"metric", "campaign", "signature", "output": {"kind", "outputs", "threshold", "n_boot", figures...,
        "clusters": {human column: place}}, "system": {...} | None, "sensitivity": {...} | None, "sanity":
        {check: counts} | None, "sanity_text"}``; ``system`` is ``None`` where the result has no system level.

    Raises:
        NotFound: the result has no such metric (404, naming it and the metrics it has).
    """
    metrics = result.get("metrics") or {}
    if name not in metrics:
        known = ", ".join(metrics) or "none"
        raise NotFound(f"metric {name!r} has no stored scores for campaign {result.get('campaign')!r} "
                       f"(stored: {known}); score it first", field="metric")
    entry = metrics[name]
    output: dict[str, Any] = {"kind": result["kind"], "outputs": result["outputs"],
                              "outputs_not_scored": result.get("outputs_not_scored", 0),
                              "threshold": result.get("threshold"), "n_boot": result.get("n_boot")}
    output.update({key: entry[key] for key in OUTPUT_KEYS if key in entry})
    output["clusters"] = {h: _cluster_of(c, name) for h, c in (result.get("output_clusters") or {}).items()}
    sensitivity = entry.get("sensitivity")
    sanity = sensitivity.get("sanity") if sensitivity else None
    return {
        "metric": name,
        "campaign": result.get("campaign"),
        "signature": entry.get("signature"),
        "excluded_systems": result.get("excluded_systems", []),
        "excluded_sources_of": result.get("excluded_sources_of"),
        "output": output,
        "system": _system_section(result, name),
        "sensitivity": sensitivity,
        "sanity": sanity,
        "sanity_text": sanity_text(sanity),
    }


def campaign_metric_card(
    *,
    campaign: Campaign,
    metric: str,
    exclude_sources_of: Campaign | None = None,
    exclude_systems: Iterable[str] = (),
    n_boot: int = N_BOOT_DEFAULT,
    seed: int = 0,
) -> dict[str, Any]:
    """The card of ``metric`` (a stored name such as ``sari`` or ``lens:3``; ``lens`` means the active
    version) on ``campaign``, from its stored scores (what the metrics API and the dashboard panel show), with
    ``stale``: why the metric cannot score new outputs now (a blend whose components changed), or None.

    Raises:
        NotFound: no metric of that name, or none stored for the campaign (404, naming it).
        ServiceError: bad ``n_boot`` or systems (400); TooMany: the heavy-computation gate is taken (429).
    """
    spec = (metric or "").strip()
    if not spec or len(spec) > 100:
        raise NotFound(f"no metric called {spec[:100]!r}", field="metric")
    result = campaign_meta_evaluate_stored(campaign=campaign, exclude_sources_of=exclude_sources_of,
                                           exclude_systems=exclude_systems, n_boot=n_boot, seed=seed)
    name = spec
    if name not in result["metrics"]:
        try:
            name = metric_get(spec).name  # "lens" -> its active version "lens:3"
        except ServiceError as exc:
            raise NotFound(f"no metric called {spec!r}: {exc.message}", field="metric") from None
    # stored figures stay valid; a version that cannot score new outputs (a changed blend) says so beside them
    return {**metric_card_from_result(result, name), "stale": metric_stale(name)}


# --- the card as text (meta_evaluate --metric NAME --format table) ------------------------------------------


def _num(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _ci(interval: Any) -> str:
    if not interval or interval[0] is None:
        return ""
    return f" [{_num(interval[0])}, {_num(interval[1])}]"


def _place(place: Mapping[str, Any] | None) -> str:
    if not place:
        return ""
    return f"; cluster {place['cluster']} of {place['clusters']} among {place['metrics']} metrics"


def _tests(card: Mapping[str, Any]) -> list[str]:
    """Each significance test behind the card's clusters, once."""
    places = [*card["output"]["clusters"].values()]
    if card.get("system"):
        places += [p for by_figure in card["system"]["clusters"].values() for p in by_figure.values()]
    tests = dict.fromkeys(f"{p['test']} ({p['correction']}-corrected, alpha {p['alpha']})" for p in places if p)
    return [f"clusters (1 = the best group; its members are not significantly different): {t}" for t in tests]


def metric_card_lines(card: Mapping[str, Any]) -> list[str]:
    """The card in lines of text, section by section (what ``meta_evaluate --format table`` prints for one
    metric)."""
    out = card["output"]
    lines = [f"metric card: {card['metric']} on {card['campaign']}", f"  signature: {card['signature']}",
             f"output level ({out['outputs']} outputs, {out['n_boot']} resamples, 95% bootstrap intervals over "
             "sources):"]
    if out["kind"] == "kendall":
        for key, value in (out.get("kendall") or {}).items():
            pairs = (out.get("pairs") or {}).get(key) or {}
            lines.append(f"  Kendall tau-like ({key}): {_num(value)}{_ci((out.get('kendall_ci') or {}).get(key))}"
                         f"  pairs {pairs.get('concordant', 0)}+/{pairs.get('discordant', 0)}-")
        for key in ("pearson", "spearman"):
            lines.append(f"  {key} vs mean z: {_num(out.get(key))}{_ci(out.get(f'{key}_ci'))}")
    else:
        for key in ("pearson", "spearman"):
            for aspect, value in (out.get(key) or {}).items():
                lines.append(f"  {key} ({aspect}): {_num(value)}"
                             f"{_ci((out.get(f'{key}_ci') or {}).get(aspect))}")
    for human, cell in (out.get("acc_eq") or {}).items():
        lines.append(f"  pairwise accuracy with tie calibration ({human}): {_num(cell.get('value'))}"
                     f"{_ci(cell.get('ci'))}, tie threshold {_num(cell.get('epsilon'))}"
                     f"{_place(out['clusters'].get(human))}")
    system = card.get("system")
    lines.append("system level:")
    if system is None:
        lines.append("  not computed for this result")
    else:
        lines.append(f"  {len(system['systems'])} systems: {', '.join(system['systems'])}")
        for human in system["humans"]:
            lines.append(f"  system means against {human} (metric / humans): " + ", ".join(
                f"{s} {_num(system['means'][human].get(s))} / {_num(system['human_means'][human].get(s))}"
                for s in system["systems"] if s in system["means"][human]))
            for figure, cell in system["figures"][human].items():
                extra = f", tie threshold {_num(cell.get('epsilon'))}" if "epsilon" in cell else ""
                if "pairs" in cell:
                    extra += f", {cell.get('agree')}/{cell.get('pairs')} pairs"
                lines.append(f"  {figure} ({human}): {_num(cell.get('value'))}{_ci(cell.get('ci_sources'))} "
                             f"(sources){_ci(cell.get('ci_systems'))} (systems){extra}"
                             f"{_place(system['clusters'].get(human, {}).get(figure))}")
    lines.extend(f"  {line}" for line in _tests(card))
    sensitivity = card.get("sensitivity")
    if sensitivity is None:
        lines.append("perturbation sensitivity: no testbed run yet")
    else:
        stale = "" if sensitivity.get("current", True) else "; measured under another signature"
        lines.append(f"perturbation sensitivity: responds as expected to {sensitivity['responds_as_expected']} "
                     f"({sensitivity['measured_on']}{stale})")
    lines.append(f"sanity checks: {card['sanity_text']}")
    for check, spec in SANITY_CHECKS.items():
        cell = (card.get("sanity") or {}).get(check)
        if cell and cell["total"]:
            lines.append(f"  {spec['label']}: {cell['passed']}/{cell['total']} sources "
                         f"({'pass' if cell['passes'] else 'fail'})")
    return lines


def metric_card_text(card: Mapping[str, Any]) -> str:
    return "\n".join(metric_card_lines(card)) + "\n"
