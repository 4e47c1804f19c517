#!/usr/bin/env bash
# Sets nfvcat up on a fresh Debian or Ubuntu machine: Debian packages (apt-get), then .venv/ at the
# repository root with every Python package pinned by constraints.txt, then cloud-init's schema
# unpacked from Debian's cloud-init package into .venv by `nfvcat fetch-schema` (cloud-init is never
# installed or run here).
# Idempotent: a second run only checks.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
venv="$root/.venv"
say() { printf '[setup] %s\n' "$*" >&2; }

# Debian packages: every list in tools/debs/ (base: the tool; others: the test tiers that need them).
# A machine that already has a usable Python 3.11 and gcc (pyenv, say) does not need the base list.
sudo_=""; [ "$(id -u)" = 0 ] || sudo_="sudo"
have_py() { command -v python3.11 >/dev/null 2>&1 && python3.11 -c 'import venv, ensurepip' 2>/dev/null; }
missing=()
provided=$(dpkg-query -W -f='${db:Status-Abbrev}|${Provides}\n' 2>/dev/null | sed -n 's/^ii *|//p' | tr ',' '\n' \
  | sed 's/ *(.*//; s/^ *//' | sort -u)
for list in tools/debs/*.txt; do
  if [ "$(basename "$list")" = base.txt ] && have_py && command -v gcc >/dev/null; then continue; fi
  while read -r p; do
    case "$p" in ''|'#'*) continue ;; esac
    # installed, or provided by an installed package (NodeSource's nodejs provides npm and conflicts with
    # Debian's: asking apt for npm there fails)
    dpkg -s "$p" >/dev/null 2>&1 || grep -qxF "$p" <<<"$provided" || missing+=("$p")
  done < "$list"
done
if [ "${#missing[@]}" -gt 0 ]; then
  say "apt-get install ${missing[*]}"
  $sudo_ apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

py=$(command -v python3.11 || command -v python3)
"$py" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || { say "Python 3.11 is required, $py is not"; exit 1; }

stamp="$venv/.nfvcat-setup"
want=$(cat constraints.txt pyproject.toml tools/testbeds/pyproject.toml tools/setup.sh | sha256sum | cut -d' ' -f1)
extras=$(sed -n 's/^\([a-z0-9-]*\) = \[.*/\1/p' <(sed -n '/^\[project.optional-dependencies\]/,/^\[/p' pyproject.toml) | paste -sd, -)
if [ ! -x "$venv/bin/nfvcat" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "creating $venv"
  "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade "pip==26.3" "setuptools==80.9.0" "wheel==0.48.0"
  # Two distributions from this repository: nfvcat (the product) and nfvcat-testbeds (the dev cloud and the
  # labs, tools/testbeds), both editable; development and CI need both.
  say "pip install nfvcat and nfvcat-testbeds (pinned by constraints.txt)"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[$extras]" -e tools/testbeds
  # Paste, PasteDeploy and WSME (the OpenStack services' WSGI stack) install setuptools' *-nspkg.pth files,
  # which rebuild their namespace packages at the start of every Python process of the venv (7 of the 20 ms
  # of a start, measured); Python 3 imports them natively (PEP 420: paste/ and wsmeext/ have no __init__.py).
  rm -f "$venv"/lib/python3.11/site-packages/*-nspkg.pth
  "$venv/bin/python" -c 'import paste.deploy.loadwsgi, paste.urlmap, wsme, wsmeext'
  echo "$want" > "$stamp"
fi

# cloud-init's schema: the tool's own fetch (Debian's cloud-init .deb, pinned by version and sha256 in
# nfvcat/cloudinit_schema.py, unpacked in Python), into the venv; a no-op once the pinned version is there.
"$venv/bin/nfvcat" fetch-schema --into "$venv/share/nfvcat/cloud-init" >/dev/null
say "ready: $venv/bin/nfvcat"
