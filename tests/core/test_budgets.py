"""core.budgets (one bound per work-sizing parameter) and core.services' job budget."""

from __future__ import annotations

import time
from typing import Any

import pytest

from core import budgets
from core.errors import Conflict, ServiceError, TooMany


def _refused(call: Any, *args: Any, **kwargs: Any) -> ServiceError:
    with pytest.raises(ServiceError) as info:
        call(*args, **kwargs)
    return info.value


def test_magnitudes_count_is_bounded_before_the_list_is_built() -> None:
    started = time.perf_counter()
    error = _refused(budgets.magnitudes_parse, "0,0.0001,...,100")
    assert time.perf_counter() - started < 0.1
    assert error.field == "magnitudes" and "1000001 magnitudes; at most 21" in error.message
    assert "too many" in _refused(budgets.magnitudes_parse, "0,1e-300,...,100").message
    assert budgets.magnitudes_parse("0,10,...,100") == [float(v) for v in range(0, 101, 10)]
    assert budgets.magnitudes_parse("0,5,...,100")[-1] == 100.0
    assert budgets.magnitudes_parse("50, 0, 50") == [0.0, 50.0]


@pytest.mark.parametrize("text", ["", "5", "0,200", "0,nan", "0,inf,...,100", "0,10,...", "a,b", "0," * 30 + "1",
                                  "1" * 500])
def test_bad_magnitudes_name_the_field(text: str) -> None:
    assert _refused(budgets.magnitudes_parse, text, field="--magnitudes").field == "--magnitudes"


def test_n_boot_bounds() -> None:
    assert budgets.n_boot_param(None) == budgets.N_BOOT_DEFAULT == 1000
    assert budgets.n_boot_param("2000") == 2000 and budgets.n_boot_param("0") == 0
    for raw in ("2001", "5000", "-1", "1.5", "9" * 30):
        error = _refused(budgets.n_boot_param, raw)
        assert error.field == "n_boot" and "from 0 to 2000" in error.message
    assert _refused(budgets.n_boot_check, 10**40, field="--n-boot").message.endswith("(got too large)")


def test_testbed_work_is_bounded_as_a_product() -> None:
    budgets.testbed_work_check(sources=2000, magnitudes=11, metrics=20)
    error = _refused(budgets.testbed_work_check, sources=2000, magnitudes=21, metrics=30)
    assert error.field == "sample" and "1260000 scores" in error.message
    assert _refused(budgets.testbed_work_check, sources=2001, magnitudes=2, metrics=1).field == "sample"
    assert _refused(budgets.sample_check, 10**12).field == "sample"
    assert _refused(budgets.metric_names_check, ["x"] * 31).field == "metrics"


def test_job_budget_counts_queued_and_running_work_per_user_and_in_all(
    db: None, make_user: Any, settings: Any
) -> None:
    from core.models import BackgroundJob
    from core.services import background_job_create, background_job_queue, job_budget_check

    settings.JOB_MAX_QUEUED_PER_USER = 2
    settings.JOB_MAX_QUEUED_TOTAL = 3
    alice, bob = make_user("alice", "researcher"), make_user("bob", "researcher")
    sent: list[int] = []
    first, created = background_job_queue(kind="k", owner=alice, key="a", send=lambda job: sent.append(job.pk))
    again, created_again = background_job_queue(kind="k", owner=alice, key="a", send=lambda job: sent.append(job.pk))
    assert created and not created_again and again.pk == first.pk and sent == [first.pk]
    running = background_job_create(kind="k", owner=alice)
    BackgroundJob.objects.filter(pk=running.pk).update(status="running")
    with pytest.raises(TooMany) as refused:
        job_budget_check(owner=alice)
    assert refused.value.status == 429
    assert [(j["kind"], j["id"], j["status"]) for j in refused.value.details["queued"]] == [
        ("k", first.pk, "queued"), ("k", running.pk, "running")]
    background_job_create(kind="k", owner=bob)
    with pytest.raises(Conflict) as full:
        job_budget_check(owner=bob)
    assert full.value.details["limit"] == 3
    BackgroundJob.objects.filter(pk=running.pk).update(status="done")  # finished work no longer counts
    job_budget_check(owner=alice)


def test_learned_metric_training_counts_in_its_starters_budget(db: None, make_user: Any, settings: Any) -> None:
    from core.services import job_budget_check, work_active
    from tests.factories import LearnedVersionFactory

    settings.JOB_MAX_QUEUED_PER_USER = 1
    admin = make_user("boss", "admin")
    version = LearnedVersionFactory.create(started_by=admin, status="queued")
    LearnedVersionFactory.create(started_by=admin, status="succeeded")
    assert work_active(owner=admin) == (1, [{"kind": f"{version.kind}-training", "id": version.pk,
                                             "status": "queued"}])
    with pytest.raises(TooMany):
        job_budget_check(owner=admin)
