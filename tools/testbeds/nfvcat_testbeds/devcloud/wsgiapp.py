"""gunicorn entry point for the OpenStack WSGI apps: ``nfvcat_testbeds.devcloud.wsgiapp:application``.

Some apps parse ``sys.argv`` for their configuration (Heat, Neutron), so under gunicorn they would see
gunicorn's arguments: ``NFVCAT_WSGI_ARGV`` (JSON list) replaces ``sys.argv`` before ``NFVCAT_WSGI_MODULE``
is imported.
"""

from __future__ import annotations

import importlib
import json
import os
import sys

sys.argv = list(json.loads(os.environ.get("NFVCAT_WSGI_ARGV", '["wsgi"]')))
application = importlib.import_module(os.environ["NFVCAT_WSGI_MODULE"]).application
