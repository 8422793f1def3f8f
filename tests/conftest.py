import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    max_examples=int(os.environ.get("SE_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")


# spark_classic (one local Spark session for the whole run) is in the root conftest.py.
@pytest.fixture(scope="session")
def spark_connect(spark_classic):
    """A Spark Connect session served by the test session's own Spark (same JVM)."""
    jvm = spark_classic.sparkContext._jvm
    try:
        service = jvm.org.apache.spark.sql.connect.service.SparkConnectService
        service.start(spark_classic.sparkContext._jsc.sc())
    except Exception as exc:  # Spark 3.5's pip package has no Connect server
        pytest.skip(f"no Spark Connect server in this Spark: {str(exc)[:120]}")
    from pyspark.sql.connect.session import SparkSession as RemoteSession

    port = spark_classic.conf.get("streameval.tests.connect.port")
    session = RemoteSession.builder.remote(f"sc://localhost:{port}").getOrCreate()
    yield session
    session.stop()


@pytest.fixture(params=["classic", "connect"])
def spark(request):
    """Each Spark flavour in turn: classic, then Spark Connect."""
    return request.getfixturevalue(f"spark_{request.param}")
