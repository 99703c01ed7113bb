"""Django admin of the learned-metric registry (LENS, REFEREE, SIERA): start a training run of a chosen kind,
retrain, promote (or roll back), cancel."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import URLPattern, path, reverse

from annotation.auth import request_user
from annotation.models import Campaign, User
from core.errors import ServiceError
from metrics.blend.kind import BlendConfig
from metrics.learned.config import (
    CPU_PROFILE,
    OPTIONS_TEXT_MAX,
    RESEARCH_PROFILE,
    ConfigError,
    Json,
    LearnedConfig,
    options_json,
)
from metrics.learned.kinds import kinds
from metrics.lens.config import OPTION_RULES, TrainConfig
from metrics.models import LearnedVersion
from metrics.services.learned import DEFAULT_CORPUS, learned_config, learned_kind

# The admin is imported by every process at start-up; the training services (and through them the statistics
# core's numpy) are imported inside the actions that use them.

DEFAULTS = TrainConfig()
BLEND_DEFAULTS = BlendConfig()
# Form field -> training option; the form shows these (LENS's options; a kind takes the ones it has), the API
# and `train_metric --option` take them all.
FAMILY_OPTIONS = ("encoder", "seed")
"""Options every kind takes (the form passes them whatever the kind)."""
FORM_OPTIONS = {"encoder": "encoder", "k": "k", "epochs": "epochs", "heldout": "heldout_fraction", "seed": "seed",
                "batch_size": "batch_size", "encoder_lr": "encoder_lr", "head_lr": "head_lr",
                "freeze_epochs": "freeze_epochs", "patience": "patience"}



BLEND_FORM_OPTIONS = ("suite", "text", "learned", "learner", "folds", "cv", "system_folds", "crossfit")
"""The blend's options the form shows as fields of their own (form field = option); other kinds ignore them."""


def _bounds(option: str) -> dict[str, Any]:
    return OPTION_RULES[option].field_bounds()


def _blend_choices(option: str) -> list[tuple[str, str]]:
    """A blend option's choices (its rule's), after an empty one that keeps the default."""
    rule = BlendConfig.rules()[option]
    default = getattr(BLEND_DEFAULTS, option)
    return [("", f"default ({default})"), *((choice, choice) for choice in rule.choices or ())]


def _blend_bounds(option: str) -> dict[str, Any]:
    return BlendConfig.rules()[option].field_bounds()


def _form_value(value: Any) -> Json:
    """A blend field's value as its option takes it (the learned choice's yes/no as true/false)."""
    return {"yes": True, "no": False}.get(value, value) if isinstance(value, str) else value


def _kind_choices() -> list[tuple[str, str]]:
    return [(name, kind.label) for name, kind in kinds().items()]


class LearnedTrainForm(forms.Form):
    """Starting a training run of any learned kind (admin and the learned metrics page). `clean` builds the
    kind's config, so the rules (bounds, unknown options) are the config's; `config` holds it once the form is
    valid. ``kind`` picks the learned metric (LENS by default). The form's fields are LENS's options; each kind takes
    the encoder, the seed and those of the others it has, and its other options as JSON."""

    kind = forms.ChoiceField(choices=_kind_choices, initial="lens", required=False,
                             help_text="LENS (ratings + references), REFEREE (ratings + corpus), SIERA (corpus) or "
                                       "the blend (ratings + references; its options are the Blend fields below; it "
                                       "trains an active version that trained on its campaigns again, up to folds + 1 "
                                       "times, to cross-fit it, unless Cross-fitting is off).")
    profile = forms.ChoiceField(
        choices=[(CPU_PROFILE, "CPU default"), (RESEARCH_PROFILE, "Research (MPNet, the paper's settings)")],
        initial=CPU_PROFILE, required=False,
        help_text="Research: the all-mpnet-base-v2 encoder (`manage.py install_encoder mpnet` first) and the "
                  "paper's settings; on a GPU worker, larger batches and mixed precision. The fields below left "
                  "at their initial values take the research settings.")
    campaigns = forms.ModelMultipleChoiceField(queryset=Campaign.objects.order_by("slug"), required=False,
                                               help_text="Their ratings are combined (LENS, REFEREE).")
    corpora = forms.CharField(max_length=500, required=False,
                              help_text=f"REFEREE, SIERA: named corpora, comma-separated (default {DEFAULT_CORPUS}).")
    options = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}), max_length=OPTIONS_TEXT_MAX,
                              help_text='Other options as a JSON object, e.g. {"stages": [1, 3]} (REFEREE).')
    encoder = forms.CharField(max_length=500, initial=DEFAULTS.model.encoder, required=False,
                              help_text="Bundled MiniLM alias, a Hugging Face name in the local cache, or a path "
                                        "(the blend has none: it is ignored).")
    k = forms.IntegerField(initial=DEFAULTS.k, help_text="Top-k references in the loss.", **_bounds("k"))
    epochs = forms.IntegerField(initial=DEFAULTS.epochs, **_bounds("epochs"))
    heldout = forms.FloatField(initial=DEFAULTS.heldout_fraction, help_text="Share of sources held out.",
                               **_bounds("heldout_fraction"))
    seed = forms.IntegerField(initial=DEFAULTS.seed, **_bounds("seed"))
    batch_size = forms.IntegerField(required=False, **_bounds("batch_size"))
    encoder_lr = forms.FloatField(required=False, **_bounds("encoder_lr"))
    head_lr = forms.FloatField(required=False, **_bounds("head_lr"))
    freeze_epochs = forms.IntegerField(required=False, **_bounds("freeze_epochs"))
    patience = forms.IntegerField(required=False, help_text="Stop after this many epochs without gain.",
                                  **_bounds("patience"))
    suite = forms.CharField(label="Blend: suite metrics", max_length=200, required=False,
                            help_text="Comma-separated (none: no suite metric); default "
                                      f"{BLEND_DEFAULTS.suite}.")
    text = forms.CharField(label="Blend: text features", max_length=200, required=False,
                           help_text="Comma-separated (none: no text feature); default "
                                     f"{BLEND_DEFAULTS.text}.")
    learned = forms.ChoiceField(label="Blend: learned versions", required=False,
                                choices=[("", "default (yes)"), ("yes", "yes"), ("no", "no")],
                                help_text="Also read the active version of every other learned metric.")
    learner = forms.ChoiceField(label="Blend: learner", required=False, choices=lambda: _blend_choices("learner"),
                                help_text="auto: cross-validation chooses among every learner's settings.")
    folds = forms.IntegerField(label="Blend: source folds", required=False, **_blend_bounds("folds"),
                               help_text="Folds of the cross-validation by source; default "
                                         f"{BLEND_DEFAULTS.folds}.")
    cv = forms.ChoiceField(label="Blend: cross-validation", required=False, choices=lambda: _blend_choices("cv"),
                           help_text="sources-systems also holds out systems (scoring new systems on new sources).")
    system_folds = forms.IntegerField(label="Blend: system folds", required=False,
                                      **_blend_bounds("system_folds"),
                                      help_text="With sources-systems: folds of systems; default "
                                                f"{BLEND_DEFAULTS.system_folds}.")
    crossfit = forms.ChoiceField(label="Blend: cross-fitting", required=False,
                                 choices=lambda: _blend_choices("crossfit"),
                                 help_text="auto: a learned version trained on the blend's own sources is read out "
                                           "of fold; off: read as it is, with a warning on the version.")
    note = forms.CharField(max_length=200, required=False)

    config: LearnedConfig

    @property
    def chosen_kind(self) -> str:
        return str(self.cleaned_data.get("kind") or "lens")

    def clean(self) -> dict[str, Any] | None:
        data = super().clean()
        if data is None or self.errors:
            return data
        kind = learned_kind(self.chosen_kind)
        if kind.needs_campaigns and not data.get("campaigns"):
            self.add_error("campaigns", "This field is required.")
            return data
        try:
            extra = options_json(data.get("options") or "{}", key="options")
        except ConfigError as exc:
            self.add_error("options", str(exc).removeprefix("options: "))
            return data
        if not isinstance(extra, dict):
            self.add_error("options", "a JSON object, e.g. {\"stages\": [1, 3]}")
            return data
        rules = kind.config_class.rules()
        # an option every kind takes but this one chooses itself (the blend's encoder) is not passed
        family = {option for option in FAMILY_OPTIONS if option not in rules or rules[option].settable}
        takes = {*family, *kind.config_class.option_rules()}
        foreign = [name for name in BLEND_FORM_OPTIONS if name not in takes and data.get(name) not in (None, "")]
        for name in foreign:  # a blend option filled in for another kind is not silently dropped
            self.add_error(name, f"an option of the blend, not of {kind.label}: choose the kind Blend, or leave "
                                 "it empty")
        if foreign:
            return data
        fields = {**FORM_OPTIONS, **{name: name for name in BLEND_FORM_OPTIONS}}
        shown = {name: option for name, option in fields.items() if option in takes}
        if data.get("profile") == RESEARCH_PROFILE and "profile" in takes:
            # a field left at its initial value does not override the research configuration's setting
            shown = {name: option for name, option in shown.items() if data.get(name) != self.fields[name].initial}
        options: dict[str, Json] = {option: _form_value(data[name]) for name, option in shown.items()
                                    if data.get(name) is not None and data.get(name) != ""}
        if data.get("profile") and ("profile" in takes or data["profile"] != CPU_PROFILE):
            # a kind without a research configuration refuses it (next to the profile field), never ignores it
            options["profile"] = data["profile"]
        options.update(extra)
        try:
            self.config = learned_config(kind, options)
        except ServiceError as exc:
            field = "profile" if exc.field == "profile" and "profile" not in extra else next(
                (name for name, option in shown.items() if option == exc.field and option not in extra), "options")
            # next to its own field, the message need not name the option again
            self.add_error(field, exc.message if field == "options" else exc.message.removeprefix(f"{exc.field}: "))
        return data


def learned_train_from_form(form: LearnedTrainForm, user: User) -> LearnedVersion:
    from metrics.services.training import learned_version_create

    data = form.cleaned_data
    corpora = [c for c in str(data.get("corpora") or "").split(",") if c.strip()]
    return learned_version_create(kind=form.chosen_kind, config=form.config,
                                  campaigns=list(data.get("campaigns") or []), corpora=corpora, started_by=user,
                                  note=data.get("note") or "")


@admin.register(LearnedVersion)
class LensModelVersionAdmin(admin.ModelAdmin[LearnedVersion]):
    list_display = ("id", "kind", "status", "is_active", "encoder", "k", "tau_all", "best_epoch", "device",
                    "started_by", "created_at", "finished_at")
    list_filter = ("kind", "status", "is_active")
    readonly_fields = [f.name for f in LearnedVersion._meta.concrete_fields if f.name != "note"] + ["campaigns"]
    actions = ["promote", "retrain", "cancel"]
    change_list_template = "frontend/learned/admin_change_list.html"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # versions are created by training (the "Train a learned metric" link)

    # Only platform admins see the registry (staff researchers do not).
    def has_module_permission(self, request: HttpRequest) -> bool:
        user = request.user
        return isinstance(user, User) and user.is_platform_admin

    def has_view_permission(self, request: HttpRequest, obj: LearnedVersion | None = None) -> bool:
        return self.has_module_permission(request)

    def has_change_permission(self, request: HttpRequest, obj: LearnedVersion | None = None) -> bool:
        return self.has_module_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj: LearnedVersion | None = None) -> bool:
        return self.has_module_permission(request) and not (obj is not None and obj.is_active)

    def get_urls(self) -> list[URLPattern]:
        return [
            path("train/", self.admin_site.admin_view(self.train_view), name="metrics_learnedversion_train"),
            *super().get_urls(),
        ]

    def train_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_module_permission(request):
            self.message_user(request, "Only admins may train a learned metric.", messages.ERROR)
            return HttpResponseRedirect(reverse("admin:metrics_learnedversion_changelist"))
        form = LearnedTrainForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                version = learned_train_from_form(form, request_user(request))
            except ServiceError as exc:
                form.add_error(None, exc.message)
            else:
                self.message_user(request, f"{version.label} v{version.pk} queued for training.", messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:metrics_learnedversion_changelist"))
        context = {**self.admin_site.each_context(request), "title": "Train a learned metric version", "form": form,
                   "opts": self.model._meta}
        return render(request, "frontend/learned/admin_train.html", context)

    @admin.action(description="Promote the selected version (or roll back to it)")
    def promote(self, request: HttpRequest, queryset: QuerySet[LearnedVersion]) -> None:
        from metrics.services.training import learned_version_promote

        if queryset.count() != 1:
            self.message_user(request, "Select exactly one version to promote.", messages.ERROR)
            return
        try:
            version = learned_version_promote(version=queryset.get(), user=request_user(request))
        except ServiceError as exc:
            where = (f" (the learned-metrics page, {reverse('frontend:learned-index')}, promotes it after you "
                     "confirm the warning)") if exc.field == "force" else ""
            self.message_user(request, exc.message + where, messages.ERROR)
        else:
            self.message_user(request, f"{version.label} v{version.pk} is now active.", messages.SUCCESS)

    @admin.action(description="Retrain with the same campaigns and settings")
    def retrain(self, request: HttpRequest, queryset: QuerySet[LearnedVersion]) -> None:
        from metrics.services.training import learned_version_create

        user = request_user(request)
        for old in queryset.prefetch_related("campaigns"):
            try:
                kind = learned_kind(old.kind)
                # Versions saved before the held-out share was part of the config keep their own.
                config = kind.stored_config({"heldout_fraction": old.heldout_fraction, **(old.hyperparameters or {})})
            except (ConfigError, ServiceError) as exc:
                self.message_user(request, f"v{old.pk}: its saved settings no longer load: {exc}", messages.ERROR)
                continue
            try:
                version = learned_version_create(kind=old.kind, config=config, campaigns=list(old.campaigns.all()),
                                                 corpora=old.corpora, started_by=user, note=f"retrain of v{old.pk}")
            except ServiceError as exc:
                self.message_user(request, f"v{old.pk}: {exc.message}", messages.ERROR)
            else:
                self.message_user(request, f"{version.label} v{version.pk} queued (retrain of v{old.pk}).",
                                  messages.SUCCESS)

    @admin.action(description="Cancel the selected queued or running trainings")
    def cancel(self, request: HttpRequest, queryset: QuerySet[LearnedVersion]) -> None:
        from metrics.services.training import learned_version_cancel

        for version in queryset:
            try:
                learned_version_cancel(version=version)
            except ServiceError as exc:
                self.message_user(request, exc.message, messages.WARNING)
            else:
                self.message_user(request, f"Cancel requested for {version.label} v{version.pk}.", messages.SUCCESS)
