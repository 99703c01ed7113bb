"""A form that fails lower on a page takes the focus to its errors (issue 44, defect 5, beyond the dashboard):
the browser scrolls to the one element with ``autofocus`` and a screen reader reads it. Without it, the testbed's
corpus import (below the run form) and a practice sentence (one of several on its page) reloaded the page at its
top with the errors out of sight."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Source
from tests.frontend.test_practice_page import PAGE, _outputs

pytestmark = pytest.mark.django_db


def focused(body: str) -> list[str]:
    """The start tags that carry ``autofocus``."""
    return re.findall(r"<[a-z]+\b[^>]*\bautofocus\b[^>]*>", body)


def test_a_failed_corpus_import_focuses_its_errors(researcher: Any, web_client_for: Any) -> None:
    client = web_client_for(researcher)
    assert focused(client.get("/research/testbed/").content.decode()) == []
    bad = client.post("/research/testbed/corpora/", {
        "name": "tiny web", "source": SimpleUploadedFile("c.orig", b"One.\n"),
        "references": [SimpleUploadedFile("c.simp.0", b"Uno.\n")]})
    assert bad.status_code == 400
    body = bad.content.decode()
    tags = focused(body)
    assert len(tags) == 1 and 'id="corpus-form-errors"' in tags[0] and 'tabindex="-1"' in tags[0]
    summary = re.search(r'id="corpus-form-errors"[^>]*>(.*?)</p>', body, re.S)
    assert summary and "not imported" in summary.group(1)
    # It is in the corpus form, after the run form.
    assert body.index('id="corpus-form-errors"') > body.index('action="/research/testbed/corpora/"')


def test_a_failed_practice_sentence_focuses_its_errors(demo_campaign: Any, researcher: Any, client: Any) -> None:
    client.force_login(researcher)
    source = Source.objects.get(campaign=demo_campaign, external_id="harbour")
    best = _outputs(source)[0]
    assert focused(client.get(PAGE, {"source": "harbour"}).content.decode()) == []

    for posted in ({f"rank-{best.pk}": "first"}, {f"rank-{best.pk}": "1"}):  # a field's error; the form's
        bad = client.post(PAGE, {"action": "save", "source": "harbour", **posted})
        assert bad.status_code == 400
        tags = focused(bad.content.decode())
        assert len(tags) == 1 and f'id="practice-{source.pk}-errors"' in tags[0], tags

    bad = client.get(PAGE, {"source": "no-such-source"})
    assert bad.status_code == 400
    tags = focused(bad.content.decode())
    assert len(tags) == 1 and 'id="practice-source"' in tags[0]
