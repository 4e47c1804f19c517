"""The one image builder: a recipe (``nfvcat.packaging.images.recipe``) in, a bootable qcow2 out, reproducibly.

Steps, none of which mounts anything (no loop devices, no root filesystem mounted on the host):

1. ``mmdebstrap --mode=root`` installs the recipe's packages into a directory, with ``SOURCE_DATE_EPOCH``
   and fixed Python/Perl hash seeds; downloaded .debs are kept in a cache for the next build.
2. The recipe's files are copied in, locales generated, host-specific state (SSH host keys, logs, caches)
   removed, the byte code Debian's maintainer scripts compiled made again reproducibly (checked-hash .pyc),
   and a GRUB EFI binary made inside the image by its own ``grub-mkimage`` with the boot config embedded
   (``-c``): it finds the root by label and boots ``/vmlinuz`` and ``/initrd.img`` (Debian keeps
   those links on kernel updates). Not ``grub-mkstandalone``: its memdisk differs on every run.
3. Every file's timestamps are clamped to ``SOURCE_DATE_EPOCH``; ``mkfs.ext4 -d`` copies the tree (sorted, by
   ``scandir``) into a filesystem image with a UUID and directory hash seed derived from the image's name and
   version, and ``E2FSPROGS_FAKE_TIME`` for the superblock; ``-d`` copies each inode's ctime, which no one
   can set on the host, so ``debugfs`` sets them after. The EFI system partition is a FAT image made by
   ``mkfs.fat --invariant`` and mtools (which honour ``SOURCE_DATE_EPOCH``).
4. ``sfdisk`` writes a GPT with fixed disk and partition GUIDs into a sparse file; the two filesystem images
   are copied in; ``qemu-img convert -c`` (in-order writes) makes the qcow2.

The lock (every package version, sha256, size) is compared with the entry's: same packages must give the same
sha256 (else the build is not reproducible: exit 2); other packages write a new lock and, when that version is
released, ask for a version bump (exit 2). Images are cached by their inputs (builder, recipe, packages).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from nfvcat import catalog
from nfvcat.catalog import releases
from nfvcat.core.errors import EXIT_FINDINGS, EXIT_USAGE, UserError
from nfvcat.packaging.images.recipe import Lock, Recipe, read_lock, write_lock

BUILDER_VERSION = "4"  # recorded in the lock: a builder that makes other bytes is another input
ESP_TYPE = "C12A7328-F81F-11D2-BA4B-00A0C93EC93B"
LINUX_TYPE = "0FC63DAF-8483-4772-8E79-3D69D8477DE4"
GRUB_MODULES = "part_gpt ext2 search search_label linux normal configfile echo test gzio efi_gop all_video"
_NS = uuid.uuid5(uuid.NAMESPACE_URL, "https://nfvcat.invalid/images")  # namespace of the derived UUIDs

Say = Callable[[str], None]


class BuildError(UserError):
    pass


@dataclass
class Built:
    recipe: Recipe
    disk: Path
    kernel: Path
    initrd: Path
    lock: Lock
    seconds: float | None  # None: from the cache
    lock_status: str  # new, reproduced, updated
    changes: list[str] = field(default_factory=list)  # package version changes against the old lock
    source: str = "catalog"  # catalog: the committed lock's image; rebuild: from what the mirror serves now
    lock_sha256: str | None = None  # the committed lock's sha256 (None: no lock)


def cache_dir() -> Path:
    return Path(os.environ.get("NFVCAT_IMAGE_CACHE") or Path.home() / ".cache" / "nfvcat" / "images")


def derived_uuid(recipe: Recipe, what: str) -> str:
    return str(uuid.uuid5(_NS, f"{recipe.name}:{recipe.version}:{what}"))


def cache_key(recipe: Recipe, lock: Lock | None) -> str:
    h = hashlib.sha256(f"{BUILDER_VERSION}\0{recipe.digest()}\0".encode())
    if lock is not None and lock.recipe == recipe.digest():
        h.update(json.dumps(lock.packages, sort_keys=True).encode())
    return h.hexdigest()[:20]


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def cached(recipe: Recipe) -> Built | None:
    """The cached build of the recipe's current lock, if there is one whose sha256 is the lock's."""
    lock = read_lock(recipe)
    if lock is None or lock.recipe != recipe.digest():
        return None
    d = cache_dir() / cache_key(recipe, lock)
    meta = d / "lock.json"
    if not (d / "disk.qcow2").is_file() or not meta.is_file():
        return None
    if json.loads(meta.read_text()).get("sha256") != lock.sha256:
        return None
    return Built(recipe, d / "disk.qcow2", d / "vmlinuz", d / "initrd.img", lock, None, "reproduced", [], "catalog",
                 lock.sha256)


def build(recipe: Recipe, say: Say, root: Path | None = None, force: bool = False) -> Built:
    """The image of ``recipe``: from the cache when its lock was built before, else built (minutes)."""
    if not force and (hit := cached(recipe)) is not None:
        say(f"{recipe.name} {recipe.version}: cached build of the lock ({hit.disk})")
        return hit
    old = read_lock(recipe)
    (base := cache_dir()).mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with (base / ".lock").open("w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        if not force and (hit := cached(recipe)) is not None:  # built by another process while this one waited
            say(f"{recipe.name} {recipe.version}: cached build of the lock ({hit.disk}), built while waiting")
            return hit
        work = Path(tempfile.mkdtemp(prefix=f"build-{recipe.name}-", dir=base))
        try:
            packages = _build(recipe, work, say, started)
            disk = work / "out" / "disk.qcow2"
            new = Lock(recipe.name, recipe.version, recipe.digest(), packages, sha256_of(disk), disk.stat().st_size,
                       BUILDER_VERSION)
            final = base / cache_key(recipe, new)
            (work / "out" / "lock.json").write_text(json.dumps(new.as_dict(), indent=1))
            if final.exists():  # a rebuild of the same lock: keep the previous manifest to compare with
                if (final / "rootfs.sha256").is_file():
                    shutil.copy(final / "rootfs.sha256", work / "out" / "rootfs.sha256.previous")
                shutil.rmtree(final)
            os.replace(work / "out", final)
        finally:
            umount_below(work)
            shutil.rmtree(work, ignore_errors=True)
    seconds = time.monotonic() - started
    built = Built(recipe, final / "disk.qcow2", final / "vmlinuz", final / "initrd.img", new, seconds, "new")
    say(f"{recipe.name} {recipe.version}: built in {seconds:.0f} s, sha256 {new.sha256}, {new.size} bytes")
    return reconcile(built, old, root)


def package_changes(old: dict[str, str], new: dict[str, str]) -> list[str]:
    return [f"{p} {old.get(p, '(none)')} -> {new.get(p, '(none)')}" for p in sorted(set(old) | set(new))
            if old.get(p) != new.get(p)]


def reconcile(built: Built, old: Lock | None, root: Path | None) -> Built:
    """Compare the build with the entry's lock; write the lock when it is new or changed (see module doc)."""
    recipe, new = built.recipe, built.lock
    if old is None:
        write_lock(recipe, new)
        built.lock_status = "new"
        return built
    same_inputs = old.recipe == new.recipe and old.packages == new.packages and old.builder == new.builder
    if same_inputs:
        if old.sha256 != new.sha256:
            raise BuildError(f"images/{recipe.name} {recipe.version}: the same recipe and packages gave sha256 "
                             f"{new.sha256}, the lock says {old.sha256}: the build is not reproducible "
                             f"(lock kept; compare the rootfs manifests in the cache)", EXIT_FINDINGS)
        built.lock_status = "reproduced"
        return built
    built.changes = package_changes(old.packages, new.packages)
    if old.recipe != new.recipe:
        built.changes.insert(0, "recipe changed")
    if old.builder != new.builder:
        built.changes.insert(0, f"builder {old.builder} -> {new.builder}")
    write_lock(recipe, new)
    built.lock_status = "updated"
    if _released(recipe, root):
        raise BuildError(
            f"images/{recipe.name} {recipe.version} is released and this build differs from it ("
            + "; ".join(built.changes[:8]) + (f"; and {len(built.changes) - 8} more" if len(built.changes) > 8
                                              else "")
            + f"): wrote the new {recipe.lock_path.name}; bump the entry's version (and CHANGELOG.md) and build "
            "again", EXIT_FINDINGS)
    return built


def _released(recipe: Recipe, root: Path | None) -> bool:
    root = root or catalog.find_root()
    try:
        record = releases.read_record(root) if root else None
    except releases.RecordError:
        return False
    item = (record or {}).get("entries", {}).get(f"images/{recipe.name}")
    return isinstance(item, dict) and str(item.get("version")) == recipe.version


def export(built: Built, out_dir: Path) -> Path:
    """Copy the image to ``out_dir`` as NAME-VERSION.qcow2, hashing the bytes as they are written: a copy that is
    not the lock's sha256 is removed and refused, naming the file and both checksums (whatever lies in the image
    cache, only the locked image is shipped). Idempotent: a file there with the lock's sha256 stays."""
    r, lock = built.recipe, built.lock
    out_dir.mkdir(parents=True, exist_ok=True)
    dest = out_dir / f"{r.name}-{r.version}.qcow2"
    if dest.is_file() and dest.stat().st_size == lock.size and sha256_of(dest) == lock.sha256:
        return dest
    tmp, h = dest.with_suffix(".part"), hashlib.sha256()
    with built.disk.open("rb") as src, tmp.open("wb") as out:
        for chunk in iter(lambda: src.read(1 << 20), b""):
            h.update(chunk)
            out.write(chunk)
    if h.hexdigest() != lock.sha256:
        tmp.unlink()
        raise BuildError(f"{built.disk}: sha256 {h.hexdigest()}, but the lock of images/{r.name} {r.version} says "
                         f"{lock.sha256}: {dest.name} not written (rebuild it: nfvcat image build "
                         f"{r.name} --force)", EXIT_FINDINGS)
    tmp.replace(dest)
    return dest


# ---- the steps ------------------------------------------------------------------------------------------------

def _env(recipe: Recipe) -> dict[str, str]:
    return {**os.environ, "SOURCE_DATE_EPOCH": str(recipe.source_date_epoch), "PYTHONHASHSEED": "0",
            "PERL_HASH_SEED": "0", "PERL_PERTURB_KEYS": "0", "LC_ALL": "C.UTF-8", "TZ": "UTC",
            "E2FSPROGS_FAKE_TIME": str(recipe.source_date_epoch), "MTOOLS_SKIP_CHECK": "1"}


def _run(cmd: list[str], log: Path, env: dict[str, str], stdin: str | None = None) -> str:
    with log.open("a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        try:
            proc = subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE, stderr=out, text=True, env=env,
                                  check=False)
        except FileNotFoundError:
            raise BuildError(f"{cmd[0]} is not installed (tools/debs/day0.txt; run tools/setup.sh)",
                             EXIT_USAGE) from None
        out.write(proc.stdout[-4000:])
    if proc.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-15:]
        raise BuildError(f"{cmd[0]} failed ({proc.returncode}); log {log}:\n" + "\n".join(tail), 3)
    return proc.stdout


def umount_below(path: Path) -> None:
    """mmdebstrap (root mode) mounts /proc, /sys, /dev/pts in the rootfs; never rmtree through them."""
    prefix = str(path.resolve()) + "/"
    with open("/proc/mounts") as f:
        points = [line.split()[1] for line in f if line.split()[1].startswith(prefix)]
    for point in sorted(points, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)


def _build(recipe: Recipe, work: Path, say: Say, t0: float) -> dict[str, str]:
    env = _env(recipe)
    root, out, log = work / "rootfs", work / "out", work / "build.log"
    out.mkdir()

    def step(msg: str) -> None:
        say(f"[{time.monotonic() - t0:5.0f} s] {recipe.name}: {msg}")

    debs = cache_dir() / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    step(f"mmdebstrap {recipe.suite}, {len(recipe.packages)} packages asked (log {log})")
    _run(["mmdebstrap", "--variant=apt", "--mode=root", f"--include={','.join(recipe.packages)}",
          "--aptopt=Acquire::Languages \"none\"",
          "--dpkgopt=path-exclude=/usr/share/man/*", "--dpkgopt=path-exclude=/usr/share/doc/*",
          "--dpkgopt=path-include=/usr/share/doc/*/copyright",
          "--dpkgopt=path-exclude=/usr/share/locale/*", "--dpkgopt=path-include=/usr/share/locale/locale.alias",
          '--setup-hook=mkdir -p "$1"/var/cache/apt/archives',
          f"--setup-hook=sync-in {debs} /var/cache/apt/archives",
          f"--customize-hook=sync-out /var/cache/apt/archives {debs}",
          recipe.suite, str(root), *recipe.mirrors], log, env)
    step("installed packages")
    listing = _run(["chroot", str(root), "dpkg-query", "-W", "-f", "${Package}:${Architecture}\t${Version}\n"],
                   log, env)
    packages = {}
    for line in listing.splitlines():
        name, _, version = line.partition("\t")
        pkg, _, arch = name.partition(":")
        packages[pkg if arch in ("amd64", "all") else name] = version
    step("files, locales, boot loader")
    _configure(recipe, root, log, env)
    kernels = sorted((root / "boot").glob("vmlinuz-*"))
    initrds = sorted((root / "boot").glob("initrd.img-*"))
    if not kernels or not initrds:
        raise BuildError(f"no kernel or initrd in the image's /boot; log {log}", 3)
    shutil.copy(kernels[-1], out / "vmlinuz")
    shutil.copy(initrds[-1], out / "initrd.img")
    esp_tree = work / "esp"
    (esp_tree / "EFI" / "BOOT").mkdir(parents=True)
    shutil.move(str(root / "tmp" / "BOOTX64.EFI"), esp_tree / "EFI" / "BOOT" / "BOOTX64.EFI")
    step("clamping timestamps, manifest")
    manifest = _clamp_and_list(root, recipe.source_date_epoch)
    efi = hashlib.sha256((esp_tree / "EFI" / "BOOT" / "BOOTX64.EFI").read_bytes()).hexdigest()
    (out / "rootfs.sha256").write_text(manifest + f"ESP {efi} EFI/BOOT/BOOTX64.EFI\n")
    step("ext4 root filesystem (mkfs.ext4 -d), EFI system partition")
    _disk(recipe, work, root, esp_tree, log, env)
    step("qcow2 (qemu-img convert -c)")
    _run(["qemu-img", "convert", "-q", "-c", "-f", "raw", "-O", "qcow2", "-o", "compat=1.1",
          str(work / "disk.raw"), str(out / "disk.qcow2")], log, env)
    shutil.copy(log, out / "build.log")
    return packages


FSTAB = "LABEL={label} / ext4 defaults,errors=remount-ro 0 1\n"
GRUB_CFG = """search --no-floppy --label {label} --set=root
set timeout=0
linux /vmlinuz root=LABEL={label} ro console=tty0 console=ttyS0,115200
initrd /initrd.img
boot
"""


def _configure(recipe: Recipe, root: Path, log: Path, env: dict[str, str]) -> None:
    label = recipe.root_label
    (root / "etc" / "fstab").write_text(FSTAB.format(label=label))
    (root / "etc" / "hostname").write_text("localhost\n")
    for f in recipe.files:
        dest = root / f.path.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(recipe.entry_dir / f.source, dest)
        dest.chmod(f.mode)
    if recipe.locales:
        (root / "etc" / "locale.gen").write_text("".join(f"{loc} UTF-8\n" for loc in recipe.locales))
        _run(["chroot", str(root), "locale-gen"], log, env)
        (root / "etc" / "default" / "locale").write_text(f"LANG={recipe.locales[0]}\n")
    # state that must be made on first boot, per instance, never shipped
    for key in (root / "etc" / "ssh").glob("ssh_host_*"):
        key.unlink()
    (root / "etc" / "machine-id").write_text("")
    for p in ("var/lib/dbus/machine-id", "var/cache/ldconfig/aux-cache", "var/lib/systemd/random-seed",
              "etc/ssh/sshd_config.d/.keep", "var/cache/debconf/templates.dat-old",
              "var/cache/debconf/config.dat-old"):
        (root / p).unlink(missing_ok=True)
    partial = root / "var" / "cache" / "apt" / "archives" / "partial"  # came from the host's .deb cache
    if partial.is_dir():
        shutil.rmtree(partial)
        partial.mkdir(mode=0o700)
    for logf in (root / "var" / "log").rglob("*"):
        if logf.is_file():
            logf.write_bytes(b"")
    _byte_code(root, log, env)
    (root / "tmp" / "grub.cfg").write_text(GRUB_CFG.format(label=label))
    _run(["chroot", str(root), "grub-mkimage", "-O", "x86_64-efi", "-o", "/tmp/BOOTX64.EFI", "-c", "/tmp/grub.cfg",
          "-p", "/boot/grub", *GRUB_MODULES.split()], log, env)
    (root / "tmp" / "grub.cfg").unlink()


PYC_TAG = ".cpython-"


def pyc_sources(root: Path) -> list[str]:
    """The sources (paths inside the image, sorted) of every ``__pycache__/*.pyc`` under ``root``/usr: what
    Debian's maintainer scripts (py3compile) byte-compiled at install time."""
    out = set()
    for pyc in (root / "usr").rglob("__pycache__/*.pyc"):
        if PYC_TAG not in pyc.name:
            continue
        src = pyc.parent.parent / (pyc.name.split(PYC_TAG, 1)[0] + ".py")
        if src.is_file():
            out.add("/" + str(src.relative_to(root)))
    return sorted(out)


def _byte_code(root: Path, log: Path, env: dict[str, str]) -> None:
    """The byte code Debian's py3compile made at install time, made again reproducibly. py3compile's .pyc are
    not reproducible (several interpreters, the order of the files, marshal's refcount-dependent flags), and an
    image without byte code compiles the standard library and cloud-init at every first boot (minutes under
    TCG). The same sources are compiled again by the image's own python3, one after the other in sorted order
    in one process (PYTHONHASHSEED from the build's environment, -B: nothing written by its own imports), as
    checked-hash .pyc (PEP 552: the source's hash instead of its timestamp, valid while the source is
    unchanged, whatever the clock)."""
    sources = pyc_sources(root)
    for cache in (root / "usr").rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)
    if sources:
        _run(["chroot", str(root), "python3", "-B", "-m", "compileall", "-q", "-f", "--invalidation-mode",
              "checked-hash", "-i", "-"], log, env, stdin="\n".join(sources) + "\n")


def _clamp_and_list(root: Path, epoch: int) -> str:
    """Clamp atime and mtime of every file to ``epoch``; the tree's manifest (mode, owner, sha256 or link)."""
    lines = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames) + dirnames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if st.st_mtime > epoch or st.st_atime > epoch:
                os.utime(p, (min(st.st_atime, epoch), min(st.st_mtime, epoch)), follow_symlinks=False)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                what = "-> " + os.readlink(p)
            elif os.path.isfile(p):
                what = hashlib.sha256(Path(p).read_bytes()).hexdigest()
            else:
                what = "dir" if os.path.isdir(p) else "special"
            lines.append(f"{st.st_mode:o} {st.st_uid}:{st.st_gid} {min(int(st.st_mtime), epoch)} {what} {rel}")
    os.utime(root, (epoch, epoch))
    return "\n".join(lines) + "\n"


def _disk(recipe: Recipe, work: Path, root: Path, esp_tree: Path, log: Path, env: dict[str, str]) -> None:
    epoch = str(recipe.source_date_epoch)
    start = 2048  # sectors of 512 bytes: 1 MiB alignment
    esp_sectors = recipe.esp_mib * 2048
    total = recipe.disk_mib * 2048
    root_start = start + esp_sectors
    root_sectors = total - root_start - 34  # the backup GPT at the end
    root_sectors -= root_sectors % 8  # whole 4 KiB blocks
    # EFI system partition
    esp = work / "esp.img"
    _run(["mkfs.fat", "-C", "--invariant", "-i", uuid.UUID(derived_uuid(recipe, "esp")).hex[:8], "-n", "NFVCAT-EFI",
          "-F", "32", str(esp), str(esp_sectors // 2)], log, env)
    for d in (esp_tree, esp_tree / "EFI", esp_tree / "EFI" / "BOOT", esp_tree / "EFI" / "BOOT" / "BOOTX64.EFI"):
        os.utime(d, (int(epoch), int(epoch)))
    _run(["mmd", "-i", str(esp), "::/EFI", "::/EFI/BOOT"], log, env)
    _run(["mcopy", "-m", "-i", str(esp), str(esp_tree / "EFI" / "BOOT" / "BOOTX64.EFI"), "::/EFI/BOOT/"], log, env)
    # root filesystem
    fs = work / "root.img"
    fs_uuid = derived_uuid(recipe, "rootfs")
    _run(["mkfs.ext4", "-q", "-F", "-L", recipe.root_label, "-U", fs_uuid, "-E",
          f"hash_seed={derived_uuid(recipe, 'hash_seed')},root_owner=0:0,lazy_itable_init=0,lazy_journal_init=0",
          "-d", str(root), str(fs), f"{root_sectors // 2}k"], log, env)
    # -d copies ctime (the host's clock) and atime (which mkfs's own reads just moved, relatime): set both
    cmds = [f"sif / ctime @{epoch}", f"sif / atime @{epoch}"]
    for dp, dns, fns in os.walk(root):
        for n in (*dns, *fns):
            if '"' in n or "\n" in n:
                continue
            p = os.path.join(dp, n)
            rel = os.sep + os.path.relpath(p, root)
            mtime = int(os.lstat(p).st_mtime)
            cmds += [f'sif "{rel}" ctime @{epoch}', f'sif "{rel}" atime @{mtime}']
    cmdfile = work / "ctime.debugfs"
    cmdfile.write_text("\n".join(cmds) + "\n")
    _run(["debugfs", "-w", "-f", str(cmdfile), str(fs)], log, env)
    _run(["e2fsck", "-fn", str(fs)], log, env)
    # GPT with fixed GUIDs, then the two filesystems at their offsets
    raw = work / "disk.raw"
    with raw.open("wb") as f:
        f.truncate(total * 512)
    table = (f"label: gpt\nlabel-id: {derived_uuid(recipe, 'disk')}\nunit: sectors\nfirst-lba: {start}\n"
             f"start={start}, size={esp_sectors}, type={ESP_TYPE}, uuid={derived_uuid(recipe, 'esp-part')}, "
             'name="EFI System"\n'
             f"start={root_start}, size={root_sectors}, type={LINUX_TYPE}, "
             f'uuid={derived_uuid(recipe, "root-part")}, name="root"\n')
    _run(["sfdisk", "--no-reread", "--no-tell-kernel", "-q", str(raw)], log, env, stdin=table)
    for img, at in ((esp, start), (fs, root_start)):
        _run(["dd", f"if={img}", f"of={raw}", "bs=1M", f"seek={at * 512}", "oflag=seek_bytes", "conv=notrunc,sparse",
              "status=none"], log, env)
        img.unlink()
