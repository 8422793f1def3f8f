import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    max_examples=int(os.environ.get("SE_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")
