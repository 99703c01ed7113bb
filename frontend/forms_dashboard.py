"""The forms of a campaign's dashboard (people, invites, crowd settings, allocation, quality items) as Django forms, so
that an error is shown next to the field that caused it and the page keeps what was typed.

The forms only name and lay out the fields: every value is checked by the service the view calls, and a
``ServiceError`` lands on the field it names (``DashboardForm.fail``). A failed form is rendered bound (its
values kept, ``aria-invalid`` and ``aria-describedby`` on the field, ``autofocus`` on it so the browser scrolls
there), the other forms unbound with the campaign's current values.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django import forms
from django.forms.boundfield import BoundField

from annotation.models import Campaign
from core.errors import ServiceError


class _DashedBoundField(BoundField):
    """Ids with hyphens (``attention-rate``), whatever the field's Python name (``attention_rate``)."""

    @property
    def auto_id(self) -> str:
        auto = self.form.auto_id
        if isinstance(auto, str) and "%s" in auto:
            return auto % self.html_name.replace("_", "-")
        return str(super().auto_id)


def _text(label: str, *, size: int | None = None, numeric: str = "", placeholder: str = "",
          help_text: str = "") -> forms.CharField:
    attrs: dict[str, Any] = {}
    if size:
        attrs["size"] = size
    if numeric:
        attrs["inputmode"] = numeric
    if placeholder:
        attrs["placeholder"] = placeholder
    return forms.CharField(label=label, required=False, strip=True, widget=forms.TextInput(attrs=attrs),
                           help_text=help_text)


class DashboardForm(forms.Form):
    bound_field_class = _DashedBoundField
    form_id: ClassVar[str]
    """The ``<form id>`` and the key the dashboard's context holds the form under."""
    id_format: ClassVar[str] = "%s"
    service_fields: ClassVar[dict[str, str]] = {}
    """The form's field for a service field of another name (the service's ``crowd_places`` is ``places``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", self.id_format)
        super().__init__(*args, **kwargs)

    def fail(self, error: ServiceError) -> None:
        """Put a service's error on the field it names, or on the form when it names none of its fields; the
        first field in error gets ``autofocus`` (the form's error summary does when no field is in error)."""
        named = self.service_fields.get(error.field or "", error.field)
        field = named if named in self.fields else None
        self.add_error(field, error.message)
        for name in self.fields:
            if name in self.errors:
                self.fields[name].widget.attrs["autofocus"] = True
                break

    @property
    def focus_summary(self) -> bool:
        """Whether the error summary, not a field, takes the focus (an error on no field of the form)."""
        return bool(self.non_field_errors()) and not any(name in self.errors for name in self.fields)


class AddAnnotatorsForm(DashboardForm):
    form_id = "people-add"
    id_format = "add-%s"
    usernames = _text("Add annotators (usernames)", placeholder="alice, bob",
                      help_text="Usernames of existing accounts, separated by commas or spaces.")


class AccountForm(DashboardForm):
    form_id = "account-form"
    id_format = "account-%s"
    username = _text("New annotator account: username")
    email = _text("E-mail (optional)")


class InviteForm(DashboardForm):
    form_id = "invite-form"
    id_format = "invite-%s"
    max_uses = _text("Invite link, uses (empty: any)", size=4, numeric="numeric")


class CrowdPlacesForm(DashboardForm):
    form_id = "crowd-places-form"
    id_format = "crowd-%s"
    service_fields: ClassVar[dict[str, str]] = {"crowd_places": "places"}
    places = _text("Places (the study's places on the platform; empty: as many as there is free work for)",
                   size=5, numeric="numeric")


class BatchForm(DashboardForm):
    form_id = "batch-form"
    batch_size = _text("Sources per annotator (empty: no limit)", size=4, numeric="numeric")


class AllocationForm(DashboardForm):
    form_id = "allocation-form"
    allocation = forms.ChoiceField(
        label="Allocation", required=False, choices=Campaign.Allocation.choices,
        help_text="Uniform: sources in their order. Adaptive: first the sources whose outputs the automatic "
                  "metrics (SARI, BLEU, FKGL) score most differently, and a source's next screen the later the "
                  "more screens it has had; until metric scores are computed, every source once before any "
                  "twice. Every screen still shows all of the source's outputs. How it compares with uniform on "
                  "released data: experiments/README.md, \"Adaptive allocation\"; for this campaign: "
                  "\"Allocation simulations\" below.")


class CompletionUrlForm(DashboardForm):
    form_id = "crowd-completion-form"
    crowd_completion_url = _text(
        "Completion URL (where a finished worker is sent, {code} standing for the code; empty: none)",
        size=50, placeholder="https://app.prolific.com/submissions/complete?cc={code}",
        help_text="Prolific: https://app.prolific.com/submissions/complete?cc={code}")


class TimeoutForm(DashboardForm):
    form_id = "crowd-timeout-form"
    idle_release_minutes = _text(
        "Time-out in minutes (a worker's unfinished work idle for longer goes back to the pool, with their place;"
        " empty: never)", size=5, numeric="numeric")


class QualitySetupForm(DashboardForm):
    form_id = "quality-setup"
    attention_rate = _text("Share of sources with attention items", size=4, numeric="decimal")
    repeat_share = _text("Share of sources repeated", size=4, numeric="decimal")


DASHBOARD_FORMS: tuple[type[DashboardForm], ...] = (
    AddAnnotatorsForm, AccountForm, InviteForm, CrowdPlacesForm, CompletionUrlForm, TimeoutForm, BatchForm,
    AllocationForm, QualitySetupForm,
)


def _initial(campaign: Campaign) -> dict[str, dict[str, Any]]:
    def blank(value: Any) -> Any:
        return "" if value is None else value

    return {
        CrowdPlacesForm.form_id: {"places": blank(campaign.crowd_places)},
        CompletionUrlForm.form_id: {"crowd_completion_url": campaign.crowd_completion_url},
        TimeoutForm.form_id: {"idle_release_minutes": blank(campaign.idle_release_minutes)},
        BatchForm.form_id: {"batch_size": blank(campaign.batch_size)},
        AllocationForm.form_id: {"allocation": campaign.allocation},
        QualitySetupForm.form_id: {"attention_rate": campaign.attention_rate, "repeat_share": campaign.repeat_share},
    }


def dashboard_forms(campaign: Campaign, failed: DashboardForm | None = None) -> dict[str, DashboardForm]:
    """Every form of the dashboard by ``form_id`` (as the template reads them: ``forms.people-add`` is not a
    valid lookup, so the keys use underscores): ``failed`` as it was submitted, the others unbound."""
    initial = _initial(campaign)
    built: dict[str, DashboardForm] = {}
    for form_class in DASHBOARD_FORMS:
        if failed is not None and isinstance(failed, form_class):
            form: DashboardForm = failed
        else:
            form = form_class(initial=initial.get(form_class.form_id, {}))
        built[form_class.form_id.replace("-", "_")] = form
    return built
