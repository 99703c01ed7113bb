"""Shared fixtures. The suite runs against DATABASE_URL (PostgreSQL in CI) and says which it used.

Rows come from the factories in tests/factories.py; the fixtures below give the usual cast (people of
each role, the demo campaign, a staffed campaign with assignments, submitted annotations) and the one
data-dir fixture, `simpeval_data_dir`, that every test of the released datasets takes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"


def pytest_report_header(config: pytest.Config) -> list[str]:
    from django.conf import settings

    db = settings.DATABASES["default"]
    where = db["NAME"] if db["ENGINE"].endswith("sqlite3") else f"{db.get('HOST') or 'socket'}:{db.get('PORT') or ''}"
    layer = str(settings.CHANNEL_LAYERS["default"]["BACKEND"]).rsplit(".", 1)[-1]
    data = Path(settings.SIMPEVAL_DATA_DIR)
    return [
        f"database: {db['ENGINE'].rsplit('.', 1)[-1]} ({where})",
        f"redis: {settings.REDIS_URL or 'not configured'}; channel layer: {layer}",
        f"released data: {data} ({'present' if (data / 'simpeval').is_dir() else 'absent'})",
    ]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that takes the released datasets is a `data` test (`-m "not data"` leaves them out)."""
    for item in items:
        if "simpeval_data_dir" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.data)


@pytest.fixture(autouse=True)
def forget_attempts() -> None:
    """Attempt limits and sign-in lock-outs (core.throttle, django-axes) count in the `throttle` cache, which
    outlives a test: every test starts with none counted."""
    from django.core.cache import caches

    caches["throttle"].clear()


# --- The released datasets --------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def simpeval_data_dir() -> Path:
    """The released datasets' folder (settings.SIMPEVAL_DATA_DIR: config.datasets reads the variable, default
    ../shared/data); skips, naming the folder, when it is missing."""
    from django.conf import settings

    folder = Path(settings.SIMPEVAL_DATA_DIR)
    if not (folder / "simpeval").is_dir():
        pytest.skip(
            f"released datasets not found: {folder / 'simpeval'} is missing "
            "(set SIMPEVAL_DATA_DIR to the folder holding simpeval/ and asset/)"
        )
    return folder


@pytest.fixture(scope="session")
def demo_jsonl() -> Path:
    """The demo campaign's JSONL (the project's own texts)."""
    return FIXTURES / "demo.jsonl"


# --- People -----------------------------------------------------------------------------------------------


@pytest.fixture
def make_user(db: None) -> Callable[..., Any]:
    from tests.factories import UserFactory

    def make(username: str, role: str = "annotator", password: str | None = None) -> Any:
        user = UserFactory.create(username=username, role=role)
        if password is not None:
            user.set_password(password)
            user.save()
        return user

    return make


@pytest.fixture
def admin_user(make_user: Callable[..., Any]) -> Any:
    return make_user("admin1", "admin")


@pytest.fixture
def researcher(make_user: Callable[..., Any]) -> Any:
    return make_user("res1", "researcher")


@pytest.fixture
def annotators(make_user: Callable[..., Any]) -> list[Any]:
    return [make_user(f"ann{i}") for i in range(1, 4)]


# --- Campaigns --------------------------------------------------------------------------------------------


@pytest.fixture
def demo_campaign(researcher: Any, demo_jsonl: Path) -> Any:
    """The demo JSONL imported into campaign 'demo' (no analysis), owned by `researcher`."""
    from annotation.services.campaigns import campaign_create
    from annotation.services.imports import campaign_import

    campaign = campaign_create(name="Demo", slug="demo", owner=researcher, ratings_per_output=2)
    with demo_jsonl.open("rb") as demo:
        campaign_import(kind="jsonl", file=demo, filename="demo.jsonl", campaign_slug="demo", user=researcher,
                        analyse=False)
    return campaign


@pytest.fixture
def staffed_campaign(demo_campaign: Any, annotators: list[Any]) -> Any:
    """The demo campaign with its first two annotators added: slots filled, one assignment per slot."""
    from annotation.services.assignments import campaign_add_annotators

    campaign_add_annotators(campaign=demo_campaign, annotators=annotators[:2])
    return demo_campaign


@pytest.fixture
def assignment(staffed_campaign: Any, annotators: list[Any]) -> Any:
    """The first assignment of the first annotator of the staffed campaign."""
    from annotation.models import Assignment

    return Assignment.objects.filter(annotator=annotators[0]).order_by("id").first()


@pytest.fixture
def submitted_annotation(assignment: Any) -> Any:
    """That assignment submitted through the service: every unit rated 50, category paraphrase."""
    from tests.factories import submit_assignment

    return submit_assignment(assignment)


@pytest.fixture
def campaign_with_outputs(db: None, researcher: Any) -> Any:
    """A small factory-built campaign owned by `researcher`: 2 sources, 3 systems, one reference each."""
    from tests.factories import campaign_with_outputs

    return campaign_with_outputs(slug="built", owners=[researcher])


@pytest.fixture
def rated_campaign(db: None) -> Callable[..., Any]:
    """Builds a campaign rated by the given raters (see tests.factories.rated_campaign)."""
    from tests.factories import rated_campaign

    return rated_campaign


# --- LENS: a tiny BERT encoder (2 layers, hidden 32) with its own vocabulary, built without downloads --------


@pytest.fixture(scope="session")
def tiny_encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.tiny import tiny_bert

    return tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="session")
def tiny_checkpoint(tiny_encoder_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One tiny LENS checkpoint trained with the pure package, shared by the serving tests."""
    import torch

    from metrics.lens import train
    from tests.tiny import lens_samples, tiny_train_config

    torch.set_num_threads(1)
    samples = lens_samples(6, 4, seed=3)
    result = train(tiny_train_config(tiny_encoder_dir, epochs=1), samples[:16], samples[16:],
                   out_dir=tmp_path_factory.mktemp("lens-ckpt"))
    return result.best_checkpoint


@pytest.fixture
def lens_on_cpu(settings: Any, tmp_path: Path) -> None:
    """One torch thread, CPU for training and serving, checkpoints under this test's tmp_path."""
    import torch

    torch.set_num_threads(1)
    settings.LEARNED_CHECKPOINT_DIR = tmp_path / "lens"
    settings.LEARNED_DEVICE = "cpu"
    settings.LEARNED_SERVING_DEVICE = "cpu"


# --- Clients ----------------------------------------------------------------------------------------------


@pytest.fixture
def api_client() -> Any:
    from rest_framework.test import APIClient

    return APIClient()


@pytest.fixture
def client_for() -> Callable[[Any], Any]:
    """A DRF client authenticated as the given user."""
    from rest_framework.test import APIClient

    def make(user: Any) -> Any:
        client = APIClient()
        client.force_authenticate(user)
        return client

    return make


@pytest.fixture
def web_client_for() -> Callable[[Any], Any]:
    """A Django test client logged in as the given user (pages, the admin)."""
    from django.test import Client

    def make(user: Any) -> Any:
        client = Client()
        client.force_login(user)
        return client

    return make


@pytest.fixture
def sim_campaign(db: Any, researcher: Any, settings: Any, tmp_path: Path) -> Any:
    """The allocation simulations' campaign "sim" (tests.factories.simulation_campaign), owned by ``researcher``;
    results are written under a temporary VAR_DIR."""
    from tests.factories import simulation_campaign

    settings.VAR_DIR = tmp_path
    return simulation_campaign(researcher)


@pytest.fixture
def tiny_corpus(db: Any, settings: Any, tmp_path: Path) -> str:
    """A four-sentence corpus named "tiny" with two references each (the testbed's pages and budgets)."""
    import io

    from annotation.services.corpora import corpus_import
    from tests.metrics.test_testbed import SIMPLE, SOURCES

    settings.VAR_DIR = tmp_path
    corpus_import(
        name="tiny",
        source_file=io.BytesIO("\n".join(SOURCES).encode()),
        source_filename="c.orig",
        reference_files=[(io.BytesIO("\n".join(s[k] for s in SIMPLE).encode()), f"c.simp.{k}") for k in range(2)],
    )
    return "tiny"
