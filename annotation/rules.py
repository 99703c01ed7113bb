"""Domain rules of a Rank & Rate study that every interface shares.

Pure Python (no Django): the services, selectors, exports, pages and commands call these functions
instead of restating the rule, so that the report, the dashboard, the metric meta-evaluation and the
exports can never disagree about the same output.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from urllib.parse import quote, urlsplit

CATEGORIES: tuple[str, ...] = ("split", "deletion", "paraphrase")
"""The three groups of the Rank & Rate method, in the order ties are broken (and pages list them)."""

ORDER_CONTRADICTION_POINTS = 10
"""An output ranked better than another but rated more than this many points below it contradicts the ranking:
the annotation page warns about it (the page reads it from its data-order-points), and a practice answer that
does it against the key does not pass (annotation.services.tutorials)."""

UNCATEGORISED = "unknown"
"""How reports, dashboards and the metric meta-evaluation label an output that has no category at all (see
:func:`final_category`)."""

TAU_THRESHOLD = 5.0
"""The Kendall tau-like's default rating gap (0-100 scale): raters whose ratings of two outputs differ by at most
this many points count as tied. Every default threshold (reports, meta-evaluation, training selection) is this
one. It lives here, with the other rating rules, so that light modules (a learned metric's config, read when
Django starts) can name it without loading the statistics core."""


def sentence_key(text: str) -> str:
    """How one sentence is recognised across files, campaigns and corpora: a source and its reference files, a
    campaign and a rated dataset, a training set and a test set. Runs of whitespace count as one space, the
    ends are stripped and case is ignored (crowd files and released corpora capitalise some sentences
    differently)."""
    return " ".join(text.split()).lower()


FALLBACK_GROUP = "paraphrase"
"""Step 1's group for an output without an automatic category: the paper's "everything else" group."""


def final_category(
    votes: Iterable[str], *, given: str = "", automatic: str = "", prefer_given: bool = False
) -> str | None:
    """The category of one output, as every report, dashboard, meta-evaluation and export uses it.

    Precedence:

    1. the annotators' votes: the category most current submitted judgements give it. A tie is
       broken by the given category when it is among the tied ones, then by the automatic one,
       then by the order split, deletion, paraphrase (never by the order of the judgements);
    2. the category given by an imported file (SimpEval's ``sentence_type``);
    3. the automatic category of the analysis;
    4. ``None``: nobody and nothing categorised the output.

    Args:
        votes: The categories of the output's current submitted judgements (blank ones are ignored).
        given: The category an imported file gave, or "".
        automatic: The automatic analysis' category, or "" when the output was not analysed.
        prefer_given: Put the given category before the votes: only for exports that must give an
            imported file back unchanged.

    Returns:
        One of :data:`CATEGORIES`, or ``None``.
    """
    given = given if given in CATEGORIES else ""
    automatic = automatic if automatic in CATEGORIES else ""
    if prefer_given and given:
        return given
    counts = Counter(vote for vote in votes if vote in CATEGORIES)
    if counts:
        best = max(counts.values())
        tied = [category for category in CATEGORIES if counts[category] == best]
        for preferred in (given, automatic):
            if preferred in tied:
                return preferred
        return tied[0]
    return given or automatic or None


def category_label(category: str | None) -> str:
    """The key an output's final category is counted under in reports (``"unknown"`` for none)."""
    return category if category is not None else UNCATEGORISED


def starting_group(automatic: str) -> str:
    """The group an output starts in at step 1: its automatic category, else the "everything else" group.

    An output that was not analysed is still placed (the annotator must group every output); the page
    flags it as not analysed from the unit's analysis status, never by disguising it.
    """
    return automatic if automatic in CATEGORIES else FALLBACK_GROUP


def percent(done: int, total: int) -> int:
    """Progress as a whole percentage, rounded down so that 100% means everything is done (0 when empty)."""
    if total <= 0:
        return 0
    return max(0, min(100, (100 * done) // total))


CROWD_PLATFORMS: tuple[str, ...] = ("prolific", "mturk")
"""The crowd platforms whose workers arrive through a campaign's crowd link (``CrowdWorker.Platform``)."""


def is_crowd_username(username: str) -> bool:
    """Whether a username lies in the crowd accounts' namespace (``<platform>-...``, any case): only the crowd
    link makes such accounts, so that nobody can register the name a worker's account will have."""
    lowered = username.lower()
    return any(lowered.startswith(f"{platform}-") for platform in CROWD_PLATFORMS)


COMPLETION_CODE_PLACEHOLDER = "{code}"
"""Where a platform's completion URL takes the campaign's completion code (``Campaign.crowd_completion_url``)."""
MAX_COMPLETION_URL_CHARS = 500


def completion_url_problem(url: str) -> str | None:
    """What is wrong with a crowd platform's completion URL, or None: an https address with a host, no
    spaces and at most 500 characters, whose only braces are the code's placeholder (Prolific's is
    ``https://app.prolific.com/submissions/complete?cc={code}``). The one rule of the pages, the API and
    the admin."""
    if len(url) > MAX_COMPLETION_URL_CHARS:
        return f"the completion URL may have at most {MAX_COMPLETION_URL_CHARS} characters"
    if any(c.isspace() for c in url):
        return "the completion URL may not contain spaces"
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:  # an unclosed IPv6 bracket, say
        host = None
    if not url.startswith("https://") or not host:
        return "the completion URL must be an https:// address, such as https://app.prolific.com/..."
    if "{" in url.replace(COMPLETION_CODE_PLACEHOLDER, "") or "}" in url.replace(COMPLETION_CODE_PLACEHOLDER, ""):
        return f"the completion URL may hold braces only as the placeholder {COMPLETION_CODE_PLACEHOLDER}"
    return None


def completion_url_for(url: str, code: str) -> str:
    """The completion URL a finished worker is sent to: ``url`` with its placeholder replaced by ``code``."""
    return url.replace(COMPLETION_CODE_PLACEHOLDER, quote(code, safe=""))


REPEAT_SUFFIX = "#repeat"
"""How a repeated source (quality control) is told from its original in the researchers' views and exports."""


def annotator_source_id(external_id: str, *, is_repeat: bool) -> str:
    """A source's id as annotators see it: a repeated source shows its original's id, so that quality control
    stays blind; researchers see ``external_id`` itself."""
    if is_repeat and external_id.endswith(REPEAT_SUFFIX):
        return external_id[: -len(REPEAT_SUFFIX)]
    return external_id
