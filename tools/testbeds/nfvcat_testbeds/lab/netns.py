"""Network namespaces for the day-0 namespace tier: a lab that creates namespaces, veth links and
daemons and removes all of them again (on success, failure and interrupt), and a way to run a VNF's
rendered day-0 files inside a namespace.

A VNF's files (cloud-config ``write_files``) are written under a root directory; a command of the VNF
runs in its namespace inside a private mount namespace where that root's ``etc`` is an overlay over the
host's ``/etc`` (so ``/etc/vrouter/...`` resolves to the rendered file and writes stay in the root),
``/run`` is private (one charon pid file and VICI socket per gateway) and ``/dev/console`` is a log file.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nfvcat.day0.userdata import file_content

PREFIX = "nfvd0-"


def run(cmd: Sequence[str], check: bool = True, timeout: float = 60, **kw: Any) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, check=False, **kw)
    if check and proc.returncode != 0:
        why = proc.stderr.strip() or proc.stdout.strip()
        raise RuntimeError(f"{shlex.join(cmd)} failed ({proc.returncode}): {why}")
    return proc


def namespaces() -> list[str]:
    """The machine's named network namespaces (``ip netns list``)."""
    return [line.split()[0] for line in run(["ip", "netns", "list"], check=False).stdout.splitlines() if line.strip()]


def pids(ns: str) -> list[int]:
    """The processes in the network namespace ``ns`` (entered by ``ip netns exec`` or ``nsenter --net``)."""
    return [int(p) for p in run(["ip", "netns", "pids", ns], check=False).stdout.split() if p.isdigit()]


def links(ns: str) -> list[str] | None:
    """The names of the links in ``ns`` (a veth's without its ``@peer``); None if the namespace cannot be read."""
    out = run(["ip", "-n", ns, "-o", "link"], check=False)
    if out.returncode != 0:
        return None
    return [line.split(":")[1].strip().split("@")[0] for line in out.stdout.splitlines() if line.count(":") >= 2]


def remove(ns: str) -> None:
    """Kill what runs in ``ns`` (a daemon that double-forked goes with it) and delete the namespace."""
    for pid in pids(ns):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    run(["ip", "netns", "del", ns], check=False)


def kernel_esp_available() -> bool:
    """Whether this kernel has ESP in the xfrm layer (a throw-away namespace, one SA)."""
    ns = f"{PREFIX}probe-{os.getpid()}"
    run(["ip", "netns", "add", ns])
    try:
        proc = run(["ip", "netns", "exec", ns, "ip", "xfrm", "state", "add", "src", "192.0.2.1", "dst", "192.0.2.2",
                    "proto", "esp", "spi", "0x100", "mode", "tunnel", "aead", "rfc4106(gcm(aes))",
                    "0x" + "11" * 20, "128"], check=False)
        return proc.returncode == 0
    finally:
        run(["ip", "netns", "del", ns], check=False)


def write_files(cloud_config: dict[str, Any], root: Path) -> list[Path]:
    """cloud-init's write_files under ``root`` (content in any of its encodings, permissions)."""
    written = []
    for item in cloud_config.get("write_files") or []:
        path = root / str(item["path"]).lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = "ab" if item.get("append") else "wb"
        with path.open(mode) as f:
            f.write(file_content(item))
        path.chmod(int(str(item.get("permissions", "0644")), 8))
        written.append(path)
    return written


def enabled_services(cloud_config: dict[str, Any], root: Path) -> list[str]:
    """ExecStart= of the units runcmd enables with --now, from their write_files unit files, in order."""
    commands = []
    for cmd in cloud_config.get("runcmd") or []:
        argv = cmd if isinstance(cmd, list) else shlex.split(str(cmd))
        if argv[:2] == ["systemctl", "enable"] and "--now" in argv:
            for unit in (a for a in argv[2:] if not a.startswith("-")):
                text = (root / "etc/systemd/system" / unit).read_text()
                commands += [line.split("=", 1)[1].strip() for line in text.splitlines()
                             if line.startswith("ExecStart=")]
    return commands


def sysctl_files(root: Path) -> list[Path]:
    return sorted((root / "etc" / "sysctl.d").glob("*.conf"))


@dataclass
class Vnf:
    """A VNF's rendered files and where its private /run and console go."""

    ns: str
    root: Path

    @property
    def run_dir(self) -> Path:
        return self.root / ".run"

    @property
    def console(self) -> Path:
        return self.root / ".console.log"

    @property
    def shim(self) -> Path:
        return self.root / ".shim"

    def prepare(self) -> None:
        for d in (self.run_dir, self.root / ".work", self.root / "etc", self.shim):
            d.mkdir(parents=True, exist_ok=True)
        self.console.touch()

    def wrap(self, argv: Sequence[str], env: dict[str, str] | None = None) -> list[str]:
        """``argv`` in the VNF's namespace with its /etc overlay, private /run and console file."""
        mounts = (f"mount -t overlay {PREFIX}etc -o lowerdir=/etc,upperdir={self.root}/etc,"
                  f"workdir={self.root}/.work /etc && mount --bind {self.run_dir} /run && "
                  f"mount --bind {self.console} /dev/console && exec \"$@\"")
        envs = [f"{k}={v}" for k, v in (env or {}).items()]
        return ["ip", "netns", "exec", self.ns, "unshare", "-m", "--propagation", "private", "sh", "-c", mounts,
                "sh", "env", f"PATH={self.shim}:/usr/sbin:/usr/bin:/sbin:/bin", *envs, *argv]


@dataclass
class Lab:
    """Namespaces, links and processes of one test run; ``close()`` removes all of them."""

    tag: str = field(default_factory=lambda: str(os.getpid()))
    namespaces: list[str] = field(default_factory=list)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def ns(self, short: str) -> str:
        name = f"{PREFIX}{self.tag}-{short}"
        run(["ip", "netns", "add", name])
        self.namespaces.append(name)
        self.sh(name, "ip link set lo up")
        return name

    def sh(self, ns: str, script: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return run(["ip", "netns", "exec", ns, "sh", "-c", script], check=check, timeout=timeout)

    def link(self, ns1: str, if1: str, ns2: str, if2: str, mac1: str | None = None, mac2: str | None = None) -> None:
        tmp1, tmp2 = f"{PREFIX}{os.getpid() % 10000}a", f"{PREFIX}{os.getpid() % 10000}b"
        run(["ip", "link", "add", tmp1, "type", "veth", "peer", "name", tmp2])
        for tmp, ns, name, mac in ((tmp1, ns1, if1, mac1), (tmp2, ns2, if2, mac2)):
            run(["ip", "link", "set", tmp, "netns", ns])
            address = f" address {mac}" if mac else ""
            self.sh(ns, f"ip link set {tmp} name {name}{address} && ip link set {name} up")

    def spawn(self, argv: Sequence[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        out = log.open("ab")
        proc = subprocess.Popen(list(argv), stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, **(env or {})})
        out.close()
        self.procs.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen[bytes], timeout: float = 5) -> None:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout)

    def forget(self, proc: subprocess.Popen[bytes]) -> None:
        """A process killed on purpose (a crash the test makes): no longer the lab's, so no check of the lab's
        daemons takes its death for a failure."""
        if proc in self.procs:
            self.procs.remove(proc)

    def close(self) -> None:
        for proc in reversed(self.procs):
            with contextlib.suppress(Exception):
                self.stop(proc)
        self.procs.clear()
        for ns in reversed(self.namespaces):
            remove(ns)
        self.namespaces.clear()


def stale_namespaces() -> list[str]:
    """nfvd0- namespaces of test runs whose process is gone."""
    stale = []
    for name in namespaces():
        parts = name.split("-")
        owner = parts[1] if name.startswith(PREFIX) and len(parts) >= 3 and parts[1].isdigit() else None
        if owner and not Path(f"/proc/{owner}").exists():
            stale.append(name)
    return stale


STRONGSWAN_CONF = """# nfvcat day-0 tier: one charon per namespace ({ns})
charon {{
  load = {plugins}
  install_routes = yes
{extra}  filelog {{
    charon {{
      path = {log}
      time_format = %T
      default = 1
      ike = 2
      flush_line = yes
    }}
  }}
  plugins {{
    vici {{
      socket = unix:///run/charon.vici
    }}
  }}
}}
"""
PLUGINS = ("random nonce openssl gcm aes sha1 sha2 hmac kdf pem pkcs1 x509 pubkey gmp curve25519 "
           "{kernel} socket-default vici updown")


def start_charon(lab: Lab, vnf: Vnf, kernel_esp: bool, extra: str = "") -> subprocess.Popen[bytes]:
    """strongSwan's charon in the VNF's namespace, with kernel-libipsec when the kernel has no ESP;
    ``extra`` is more of the charon section (e.g. short retransmission timers)."""
    conf = vnf.root / ".strongswan.conf"
    kernel = "kernel-netlink" if kernel_esp else "kernel-libipsec kernel-netlink"
    conf.write_text(STRONGSWAN_CONF.format(ns=vnf.ns, plugins=PLUGINS.format(kernel=kernel), extra=extra,
                                           log=vnf.root / ".charon.log"))
    proc = lab.spawn(vnf.wrap(["/usr/lib/ipsec/charon"], env={"STRONGSWAN_CONF": str(conf)}),
                     vnf.root / ".charon.out")
    deadline = time.monotonic() + 15
    while not (vnf.run_dir / "charon.vici").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"charon did not start in {vnf.ns}: {(vnf.root / '.charon.out').read_text()[-800:]}")
        time.sleep(0.05)
    return proc


def acl_counters(lab: Lab, ns: str, tables: Sequence[tuple[str, str]], vrouter_acl: Path | None = None
                 ) -> dict[str, int]:
    """Packets per ACL rule id (the first word of a comment, e.g. ``acl_forward#3``), summed over the
    map elements and rules that carry it, from ``nft -j`` of those of ``tables`` ((family, name) pairs) that
    are loaded, and, with ``vrouter_acl`` (the vRouter's compiler), over the rules of its eBPF programs
    (``vrouter-acl --counters``).
    An element or rule with a comment but without a counter counts -1, so a test sees the missing counter."""
    out: dict[str, int] = {}

    def add(comment: str | None, counter: dict[str, Any] | None) -> None:
        if not comment:
            return
        rid = comment.split()[0]
        packets = int(counter["packets"]) if counter else -1
        out[rid] = -1 if packets < 0 or out.get(rid, 0) < 0 else out.get(rid, 0) + packets

    if vrouter_acl is not None:
        for rid, packets in json.loads(lab.sh(ns, f"python3 {vrouter_acl} --counters").stdout).items():
            add(rid, {"packets": packets})
    for family, table in tables:
        listed = lab.sh(ns, f"nft -j list table {family} {table}", check=False)
        if listed.returncode:
            continue  # not loaded (the other datapath is)
        for item in json.loads(listed.stdout).get("nftables", []):
            if rule := item.get("rule"):
                counter = next((e["counter"] for e in rule["expr"] if isinstance(e, dict) and "counter" in e), None)
                add(rule.get("comment"), counter)
            for kind in ("map", "set"):
                for elem in (item.get(kind) or {}).get("elem", []):
                    key = elem[0] if kind == "map" else elem
                    if isinstance(key, dict) and "elem" in key:
                        add(key["elem"].get("comment"), key["elem"].get("counter"))
    return out


def nft_rules(lab: Lab, ns: str, family: str, table: str) -> list[dict[str, Any]]:
    """The rules of a table as ``nft -j`` gives them (chain, expr, comment, ...), in order."""
    data = json.loads(lab.sh(ns, f"nft -j list table {family} {table}").stdout)
    return [item["rule"] for item in data.get("nftables", []) if "rule" in item]
