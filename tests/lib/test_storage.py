"""A database that refuses writes: a write answers 503 naming the real error (not a 500), every
page shows a banner, and once writes pass again the banner goes and writes succeed. The database
is made read-only by the test (SQLite's query_only on its own connection; PostgreSQL's
default_transaction_read_only on a scratch database), so the pages meet the real refusal of the
real database. No chattr: the file system is left alone."""

from contextlib import contextmanager

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evaluation.models import Worker
from lib import storage
from searches.models import Search
from tests.searches.test_distributed import django_script, last_json, pg_url  # noqa: F401 (fixture)
from tests.searches.test_engine import kicks, problem, start  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_health")]


@contextmanager
def read_only():
    """The connection refuses every write until the block ends."""
    if connection.vendor != "sqlite":  # PostgreSQL's case: the test at the end, on a scratch database
        pytest.skip("makes SQLite read-only with PRAGMA query_only")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA query_only = ON")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA query_only = OFF")


@pytest.fixture
def alice(client):
    user = get_user_model().objects.create_user("alice", password="pw-alice-123")
    client.force_login(user)
    return user


def test_a_write_refused_by_the_storage_is_a_503_naming_it_then_recovers(client, alice, problem):
    search = start(problem)
    Search.objects.filter(pk=search.pk).update(created_by=alice)  # hers to pause
    with read_only():
        response = client.post(reverse("search_pause", args=[search.code]))
        assert response.status_code == 503
        body = response.content.decode()
        assert 'id="storage-fault"' in body and "attempt to write a readonly database" in body
        assert "css/app.css" in body and "Log out" in body  # the base page, with the user's menu
        page = client.get(reverse("search_list")).content.decode()
        assert 'id="storage-banner"' in page and "Storage problem: attempt to write a readonly database since" in page
    assert Search.objects.get(pk=search.pk).status == Search.Status.QUEUED  # nothing half-written

    page = client.get(reverse("search_list")).content.decode()
    assert 'id="storage-banner"' not in page  # writable again: the probe clears it
    response = client.post(reverse("search_pause", args=[search.code]))
    assert response.status_code == 302
    assert Search.objects.get(pk=search.pk).status == Search.Status.PAUSED


def test_login_with_a_read_only_database_is_a_clear_page_not_a_500(client):
    get_user_model().objects.create_user("bob", password="pw-bob-12345")
    with read_only():
        response = client.post(reverse("login"), {"username": "bob", "password": "pw-bob-12345"})
    assert response.status_code == 503
    body = response.content.decode()
    assert "Storage problem" in body and "attempt to write a readonly database" in body
    response = client.post(reverse("login"), {"username": "bob", "password": "pw-bob-12345"})
    assert response.status_code == 302  # writable again: the login goes through


def test_a_page_whose_database_cannot_be_read_still_gets_the_plain_503(rf):
    from django.contrib.auth.models import AnonymousUser
    from django.db import OperationalError

    request = rf.post("/anything/")
    request.user = AnonymousUser()
    response = storage.StorageFaultMiddleware(lambda r: None).process_exception(
        request, OperationalError("disk I/O error"))
    assert response.status_code == 503 and "disk I/O error" in response.content.decode()
    assert storage.storage_fault()["error"] == "disk I/O error"  # remembered: the probe cannot see a failing disk


def test_a_full_disk_is_shown_until_a_write_passes(client, alice, problem):
    search = start(problem)
    Search.objects.filter(pk=search.pk).update(created_by=alice)
    storage.record_fault("database or disk is full", where="an earlier request")
    page = client.get(reverse("problem_list")).content.decode()
    assert "Storage problem: database or disk is full since" in page  # a read passes; the fault stands
    assert client.post(reverse("search_pause", args=[search.code])).status_code == 302  # a write passes
    assert 'id="storage-banner"' not in client.get(reverse("problem_list")).content.decode()


def test_without_a_fault_a_page_runs_no_write_probe(client, alice):
    with CaptureQueriesContext(connection) as seen:
        client.get(reverse("problem_list"))
    assert not [q for q in seen.captured_queries if "django_migrations" in q["sql"]]


def test_only_storage_errors_are_storage_faults():
    from django.db import IntegrityError, InternalError, OperationalError

    assert storage.storage_error(OperationalError("database or disk is full")) == "database or disk is full"
    assert storage.storage_error(InternalError("cannot execute UPDATE in a read-only transaction"))
    assert storage.storage_error(IntegrityError("UNIQUE constraint failed: searches_problem.name")) == ""
    assert storage.storage_error(ValueError("disk")) == ""



def test_a_write_the_evaluator_could_not_make_is_logged_with_the_real_error(caplog):
    from evaluation.devices import record_device_facts

    Worker.objects.create(name="w-cpu", device="cpu")
    with read_only(), caplog.at_level("WARNING"), transaction.atomic():  # the savepoint: the test's transaction lives on
        record_device_facts(worker_name="w-cpu", device="cpu")
    [line] = [r.getMessage() for r in caplog.records if "device facts not recorded" in r.getMessage()]
    assert "attempt to write a readonly database" in line and "busy" not in line


PG_READ_ONLY = """
import psycopg
from django.contrib.auth import get_user_model
from django.db import connection, connections
from django.test import Client
from django.test.utils import setup_test_environment
from lib import storage

setup_test_environment()
storage.PROBE_SECONDS = 0
get_user_model().objects.create_user("dana", password="pw-dana-1234")
name = connection.settings_dict["NAME"]

def read_only(on):
    with psycopg.connect("host=127.0.0.1 user=postgres dbname=postgres", autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = {"on" if on else "off"}')
    connections.close_all()  # the setting holds for new connections

login = {"username": "dana", "password": "pw-dana-1234"}
client, out = Client(), {}
client.post("/login/", login)
read_only(True)
response = client.post("/login/", login)
out["login"] = [response.status_code, response.content.decode()]
out["banner"] = client.get("/searches/").content.decode()
read_only(False)
out["after"] = client.get("/searches/").content.decode()
out["login_after"] = client.post("/login/", login).status_code
print(json.dumps(out))
"""


@pytest.mark.slow
@pytest.mark.postgres
def test_a_read_only_postgresql_database_gets_the_banner_and_the_503_then_recovers(pg_url):
    """PostgreSQL in its own scratch database, made read-only for new sessions by the test."""
    out = last_json(django_script(PG_READ_ONLY, pg_url))
    assert "Storage problem: cannot execute UPDATE in a read-only transaction" in out["banner"]
    status, body = out["login"]
    assert status == 503 and "read-only transaction" in body and 'id="storage-fault"' in body
    assert 'id="storage-banner"' not in out["after"] and out["login_after"] == 302
