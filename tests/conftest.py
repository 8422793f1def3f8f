import os
import tempfile

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


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("localhost", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def spark_classic():
    """A real local Spark session (local[2]) for the whole test session, stopped at the end."""
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    port = _free_port()
    session = (
        SparkSession.builder.master("local[2]")
        .appName("streameval-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.warehouse.dir", tempfile.mkdtemp(prefix="se-spark-warehouse-"))
        .config("spark.connect.grpc.binding.port", str(port))
        .config("spark.driver.extraJavaOptions", "-Dlog4j.rootLogger=ERROR")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    session.conf.set("streameval.tests.connect.port", str(port))
    yield session
    session.stop()


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
