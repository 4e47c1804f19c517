from tests.unit.cloudfake import cloud  # noqa: F401 (the HTTP-level fake OpenStack fixture)
