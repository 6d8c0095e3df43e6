"""Escape probes, run INSIDE a container (an agent turn, or a test's positive-control container).

Standard library only: it runs under the agent image's Python with nothing else.

    python escape_probe.py --spec SPEC.json --out OUT.json
    python escape_probe.py --spec env:NAME --out -      (spec from $NAME, report on stdout)

SPEC is `{"mode": ..., ...}`; each mode writes one JSON report to OUT (which the test reads
back from the turn's out/ folder). A probe *reports* what it could reach, see or do; the test
decides what must be empty. The same script runs in the unprotected positive controls, so a
probe that could not have succeeded anywhere shows up as a failed positive control.

Traffic: the script connects only to the addresses it is given (all on this machine: the
test's containers, networks and canary). The one name lookup of a public name is made only
when the routing table has no route beyond the container's own subnets (`dns_public`), so it
can never leave the machine.
"""
from __future__ import annotations

import argparse
import errno
import hashlib
import json
import os
import re
import selectors
import signal
import socket
import stat
import subprocess
import sys
import time

HEX64 = re.compile(rb"[0-9a-fA-F]{64}")
SKIP_TREES = ("/proc", "/sys")
MAX_FILE = 64 * 2**20


# -- network ------------------------------------------------------------------------------------


def _family(host: str) -> int:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _sockaddr(host: str, port: int):
    if ":" in host:  # fe80::1%eth0 style: getaddrinfo resolves the scope id
        return socket.getaddrinfo(host, port, socket.AF_INET6, socket.SOCK_STREAM)[0][4]
    return (host, port)


def tcp(host: str, port: int, timeout: float = 2.0) -> str:
    """'open' or the error (errno name) of one TCP connect."""
    try:
        s = socket.socket(_family(host), socket.SOCK_STREAM)
    except OSError as exc:
        return f"socket:{errno.errorcode.get(exc.errno, exc.errno)}"
    s.settimeout(timeout)
    try:
        s.connect(_sockaddr(host, port))
        return "open"
    except TimeoutError:
        return "timeout"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno)) if exc.errno else type(exc).__name__
    finally:
        s.close()


def http_get(host: str, port: int, path: str, headers: dict[str, str] | None = None, timeout: float = 3.0) -> dict:
    """A raw HTTP/1.0 GET: {'status': int, 'body': first 2 kB} or {'error': ...}."""
    try:
        s = socket.socket(_family(host), socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(_sockaddr(host, port))
    except OSError as exc:
        return {"error": errno.errorcode.get(getattr(exc, "errno", 0) or 0, type(exc).__name__)}
    try:
        head = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        s.sendall(f"GET {path} HTTP/1.0\r\nHost: {host}\r\n{head}\r\n".encode())
        data = b""
        while len(data) < 65536:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError as exc:
        return {"error": type(exc).__name__}
    finally:
        s.close()
    line = data.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split()
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    body = data.split(b"\r\n\r\n", 1)[-1][:2048].decode("utf-8", "replace")
    return {"status": status, "body": body}


def scan_ports(host: str, ports: range, batch: int = 2048, batch_timeout: float = 1.5) -> dict:
    """Non-blocking connects to every port; {'open': [...], 'errors': {errno: count}}."""
    opened: list[int] = []
    errors: dict[str, int] = {}
    fam = _family(host)
    plist = list(ports)
    for i in range(0, len(plist), batch):
        sel = selectors.DefaultSelector()
        pending = {}
        for port in plist[i : i + batch]:
            s = socket.socket(fam, socket.SOCK_STREAM)
            s.setblocking(False)
            rc = s.connect_ex(_sockaddr(host, port))
            if rc == 0:
                opened.append(port)
                s.close()
            elif rc in (errno.EINPROGRESS, errno.EWOULDBLOCK):
                sel.register(s, selectors.EVENT_WRITE, port)
                pending[port] = s
            else:
                name = errno.errorcode.get(rc, str(rc))
                errors[name] = errors.get(name, 0) + 1
                s.close()
        deadline = time.monotonic() + batch_timeout
        while pending and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=max(0.0, deadline - time.monotonic())):
                s, port = key.fileobj, key.data
                rc = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if rc == 0:
                    opened.append(port)
                else:
                    name = errno.errorcode.get(rc, str(rc))
                    errors[name] = errors.get(name, 0) + 1
                sel.unregister(s)
                s.close()
                pending.pop(port, None)
        for s in pending.values():
            sel.unregister(s)
            s.close()
        if pending:
            errors["timeout"] = errors.get("timeout", 0) + len(pending)
        sel.close()
    return {"open": sorted(opened), "errors": errors}


def routes() -> dict:
    """IPv4 and IPv6 routing tables of this network namespace, from /proc."""
    v4 = []
    for line in _read_text("/proc/net/route").splitlines()[1:]:
        f = line.split()
        if len(f) >= 8:
            dest = socket.inet_ntoa(bytes.fromhex(f[1])[::-1])
            mask = socket.inet_ntoa(bytes.fromhex(f[7])[::-1])
            gw = socket.inet_ntoa(bytes.fromhex(f[2])[::-1])
            v4.append({"iface": f[0], "dest": dest, "mask": mask, "gateway": gw})
    v6 = []
    for line in _read_text("/proc/net/ipv6_route").splitlines():
        f = line.split()
        if len(f) >= 10 and f[9] != "lo":
            v6.append({"dest": f[0], "prefix": int(f[1], 16), "iface": f[9]})
    return {
        "v4": v4,
        "v6": v6,
        "v4_default": any(r["dest"] == "0.0.0.0" and r["mask"] == "0.0.0.0" for r in v4),
        "v6_default": any(r["prefix"] == 0 for r in v6),
        "v4_gateways": sorted({r["gateway"] for r in v4 if r["gateway"] != "0.0.0.0"}),
    }


def resolve(name: str) -> dict:
    try:
        infos = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
        return {"resolved": sorted({i[4][0] for i in infos})}
    except socket.gaierror as exc:
        return {"error": f"gaierror:{exc.errno}"}
    except OSError as exc:
        return {"error": type(exc).__name__}


def mode_network(spec: dict) -> dict:
    """Reachability of the given targets, full port scans, control API, routes and names."""
    out: dict = {"routes": routes(), "resolv_conf": _read_text("/etc/resolv.conf")}
    token = spec.get("control_token")
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    # Wait (bounded) for targets that a concurrent container is still opening (positive controls).
    for target in spec.get("wait_open", []):
        host, port = target.rsplit(":", 1)
        end = time.monotonic() + 30
        while tcp(host, int(port), 1.0) != "open" and time.monotonic() < end:
            time.sleep(0.3)
    out["scans"] = {}
    for host in spec.get("scan_all_ports", []):
        res = scan_ports(host, range(1, 65536))
        res["control_api"] = {str(p): http_get(host, p, "/control/health", auth) for p in res["open"]}
        out["scans"][host] = res
    out["tcp"] = {t: tcp(*_split(t)) for t in spec.get("tcp", [])}
    out["http"] = {t: http_get(*_split(t), "/", {}) for t in spec.get("http", [])}
    out["control_api"] = {t: http_get(*_split(t), "/control/health", auth) for t in spec.get("control", [])}
    out["names"] = {n: resolve(n) for n in spec.get("names", [])}
    # A public name, only when nothing could carry the query beyond the machine (see module doc).
    public = spec.get("dns_public") or []
    local_nets = spec.get("local_subnets_v4") or []
    r = out["routes"]
    beyond = [x for x in r["v4"] if not any(_in_net(x["dest"], net) for net in local_nets)]
    if public and not r["v4_default"] and not r["v6_default"] and not beyond and not r["v6"]:
        out["dns_public"] = {n: resolve(n) for n in public}
    elif public:
        out["dns_public"] = {n: {"skipped": "a route beyond the local subnets exists", "beyond": beyond} for n in public}
    return out


def _split(target: str) -> tuple[str, int]:
    host, port = target.rsplit(":", 1)
    return host.strip("[]"), int(port)


def _in_net(addr: str, cidr: str) -> bool:
    import ipaddress

    return ipaddress.ip_address(addr) in ipaddress.ip_network(cidr, strict=False)


def mode_listen(spec: dict) -> dict:
    """Listen on 0.0.0.0:port; record peers; stop on b'STOP' or after `max_s`."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", int(spec["port"])))
    srv.listen(64)
    srv.settimeout(0.5)
    peers = []
    end = time.monotonic() + float(spec.get("max_s", 120))
    stopped = False
    while time.monotonic() < end and not stopped:
        try:
            conn, addr = srv.accept()
        except TimeoutError:
            continue
        conn.settimeout(1.0)
        try:
            data = conn.recv(16)
        except OSError:
            data = b""
        peers.append({"addr": addr[0], "data": data.decode("latin-1")})
        if data.startswith(b"STOP"):
            stopped = True
        conn.close()
    srv.close()
    return {"peers": peers, "stopped": stopped}


# -- secrets, files, writes ---------------------------------------------------------------------


def _read_text(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _read_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(MAX_FILE + 1)
    except OSError:
        return None


def walk(root: str = "/"):
    """(path, lstat) of everything under root except /proc and /sys; never follows links."""
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for name in names:
            p = os.path.join(d, name)
            if p in SKIP_TREES:
                continue
            try:
                st = os.lstat(p)
            except OSError:
                continue
            yield p, st
            if stat.S_ISDIR(st.st_mode):
                stack.append(p)


def mode_secrets(spec: dict) -> dict:
    """Look for the control token(s), forbidden files, sqlite databases, sockets, writable places."""
    token_hashes = set(spec.get("token_sha256", []))
    forbidden = {v: k for k, v in (spec.get("forbidden_sha256") or {}).items()}

    def token_hits(blob: bytes) -> bool:
        return any(hashlib.sha256(m.lower()).hexdigest() in token_hashes for m in HEX64.findall(blob))

    # A unix socket of our own: the socket search must find it (the probe's self-check).
    self_sock = os.path.join(spec.get("self_socket_dir", "/tmp"), "escape-self.sock")
    us = socket.socket(socket.AF_UNIX)
    try:
        os.unlink(self_sock)
    except OSError:
        pass
    us.bind(self_sock)

    found: dict = {"token_env": [], "token_proc": [], "token_files": [], "forbidden": [], "sqlite": [], "sockets": [], "unreadable_files": 0}
    env_blob = "\n".join(f"{k}={v}" for k, v in os.environ.items()).encode()
    if token_hits(env_blob):
        found["token_env"].append("os.environ")
    procs = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        for part in ("environ", "cmdline"):
            blob = _read_bytes(f"/proc/{pid}/{part}")
            if blob and token_hits(blob.replace(b"\0", b"\n")):
                found["token_proc"].append(f"/proc/{pid}/{part}")
        procs.append(_read_text(f"/proc/{pid}/cmdline").replace("\0", " ").strip())
    found["processes"] = procs
    files = 0
    writable_dirs: list[str] = []
    writable_files: list[str] = []
    for path, st in walk("/"):
        if stat.S_ISSOCK(st.st_mode):
            found["sockets"].append(path)
        elif stat.S_ISREG(st.st_mode) and not path.startswith("/dev/"):
            if os.access(path, os.W_OK):  # honours read-only mounts (EROFS) as well as modes
                writable_files.append(path)
            if st.st_size > MAX_FILE:
                continue
            blob = _read_bytes(path)
            if blob is None:
                found["unreadable_files"] += 1
                continue
            files += 1
            if token_hits(blob):
                found["token_files"].append(path)
            h = hashlib.sha256(blob).hexdigest()
            if h in forbidden:
                found["forbidden"].append({"path": path, "is": forbidden[h]})
            if blob.startswith(b"SQLite format 3\0"):
                found["sqlite"].append(path)
        elif stat.S_ISDIR(st.st_mode) and spec.get("check_writes", True) and _can_write(path):
            writable_dirs.append(path)
    if _can_write("/"):
        writable_dirs.append("/")
    found["files_scanned"] = files
    # /proc and /sys are not walked; their writable corners are checked by name.
    for special in ("/proc/sys/kernel", "/proc/sys/net/ipv4", "/sys/fs/cgroup", "/sys/kernel"):
        if _can_write(special):
            writable_dirs.append(special)
    for special in ("/proc/sys/kernel/core_pattern", "/proc/sys/net/ipv4/ip_forward", "/proc/sysrq-trigger",
                    "/sys/fs/cgroup/pids/pids.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                    "/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/memory.max"):
        if os.path.exists(special) and os.access(special, os.W_OK):
            writable_files.append(special)
    found["writable_dirs"] = sorted(writable_dirs)
    found["writable_files"] = sorted(writable_files)
    found["mounts"] = _mounts()
    found["docker_socket_paths"] = {p: os.path.exists(p) for p in ("/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock")}
    found["paths_exist"] = {p: os.path.exists(p) for p in spec.get("paths", [])}
    found["root_mount"] = _root_mount()
    found["self_socket"] = self_sock
    us.close()
    os.unlink(self_sock)
    return found


def _can_write(folder: str) -> bool:
    probe = os.path.join(folder, f".escape-write-{os.getpid()}")
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError:
        return False
    os.close(fd)
    try:
        os.unlink(probe)
    except OSError:
        pass
    return True


def _mounts() -> list[dict]:
    """Mount point, source path inside its filesystem, and options of every mount (mountinfo)."""
    out = []
    for line in _read_text("/proc/self/mountinfo").splitlines():
        f = line.split()
        if len(f) > 5:
            sep = f.index("-") if "-" in f else len(f)
            out.append({"root": f[3], "point": f[4], "options": f[5], "fstype": f[sep + 1] if sep + 1 < len(f) else "?",
                        "source": f[sep + 2] if sep + 2 < len(f) else "?"})
    return out


def _root_mount() -> str:
    for line in _read_text("/proc/self/mountinfo").splitlines():
        f = line.split()
        if len(f) > 5 and f[4] == "/":
            return f[5]
    return "?"


# -- leftovers ----------------------------------------------------------------------------------


def mode_leave(spec: dict) -> dict:
    """Leave a detached sleeper, a listener and marker files behind; show they exist now."""
    marker = spec["marker"]
    code = "import sys,time,socket\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n" \
           f"s.bind(('0.0.0.0',{int(spec['port'])}));s.listen(8)\ntime.sleep(3600)"
    # Double fork + setsid: the sleeper is no child of the turn's process group or session.
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
            os.execv(sys.executable, [sys.executable, "-c", code, marker])
        os._exit(0)
    os.waitpid(pid, 0)
    for folder in spec["marker_dirs"]:
        try:
            with open(os.path.join(folder, marker), "w") as fh:
                fh.write("left by turn\n")
        except OSError:
            pass
    time.sleep(1.0)
    return {"now": _leftover_state(spec)}


def _leftover_state(spec: dict) -> dict:
    marker = spec["marker"]
    procs = [p for p in os.listdir("/proc") if p.isdigit() and marker in _read_text(f"/proc/{p}/cmdline")]
    return {
        "processes": procs,
        "listener": tcp("127.0.0.1", int(spec["port"]), 1.0),
        "markers": {d: os.path.exists(os.path.join(d, marker)) for d in spec["marker_dirs"]},
    }


def mode_check_left(spec: dict) -> dict:
    return {"now": _leftover_state(spec)}


def mode_plant_links(spec: dict) -> dict:
    """Leave links and special files where the host copies from (workspace, out/)."""
    made = []
    ws, out = os.environ["WORKSPACE"], spec["out_dir"]
    for folder, name, target in ((ws, "link-passwd", "/etc/passwd"), (ws, "link-root", "/"),
                                 (ws, "link-up", "../../../../../../tmp"), (out, "link-shadow", "/etc/shadow")):
        try:
            os.symlink(target, os.path.join(folder, name))
            made.append(os.path.join(folder, name))
        except OSError as exc:
            made.append(f"{name}: {exc}")
    try:
        os.mkfifo(os.path.join(ws, "fifo"))
        made.append(os.path.join(ws, "fifo"))
    except OSError as exc:
        made.append(f"fifo: {exc}")
    return {"made": made}


# -- limits -------------------------------------------------------------------------------------


def _cg(*names: str) -> str | None:
    for n in names:
        t = _read_text(n).strip()
        if t:
            return t
    return None


def pids_current() -> int:
    return int(_cg("/sys/fs/cgroup/pids/pids.current", "/sys/fs/cgroup/pids.current") or -1)


def mode_bomb(spec: dict) -> dict:
    """A fork bomb for `bomb_s` seconds, then a memory hog; report what the limits did."""
    out: dict = {
        "pids_max": _cg("/sys/fs/cgroup/pids/pids.max", "/sys/fs/cgroup/pids.max"),
        "mem_max": _cg("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory.max"),
        "pids_before": pids_current(),
        "t_bomb_start": time.time(),
    }
    # Fork bomb: every process forks forever; all in one new process group we can kill.
    bomb = os.fork()
    if bomb == 0:
        os.setpgid(0, 0)
        while True:
            try:
                os.fork()
            except OSError:
                time.sleep(0.005)
    peak, fork_refused = 0, False
    end = time.monotonic() + float(spec.get("bomb_s", 6))
    while time.monotonic() < end:
        peak = max(peak, pids_current())
        time.sleep(0.1)
    try:  # our own fork must be refused while the bomb holds every pid
        child = os.fork()
        if child == 0:
            os._exit(0)
        os.waitpid(child, 0)
    except OSError as exc:
        fork_refused = exc.errno == errno.EAGAIN
    for _ in range(200):
        try:
            os.killpg(bomb, signal.SIGKILL)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    settle = time.monotonic() + 20
    while time.monotonic() < settle:  # reap our direct child; the others are reparented to init
        try:
            os.waitpid(-1, os.WNOHANG)
            if pids_current() <= out["pids_before"] + 1:
                break
        except ChildProcessError:
            break
        time.sleep(0.05)
    out.update(t_bomb_end=time.time(), pids_peak=peak, own_fork_refused=fork_refused, pids_after_kill=pids_current(),
               bomb_events=_cg("/sys/fs/cgroup/pids/pids.events", "/sys/fs/cgroup/pids.events"))
    # Memory hog: a child that touches up to `hog_factor` times the limit.
    limit = int(out["mem_max"]) if (out["mem_max"] or "").isdigit() else 2**31
    target = int(limit * float(spec.get("hog_factor", 2)))
    def hog(size: int) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c",
             "import sys\nchunks=[]\nn=int(sys.argv[1])\nwhile sum(map(len,chunks))<n:\n"
             "    chunks.append(bytearray(64*2**20))\n    chunks[-1][::4096]=b'x'*len(range(0,64*2**20,4096))\n"
             "print('survived', flush=True)", str(size)],
            capture_output=True, text=True, timeout=float(spec.get("hog_timeout_s", 60)),
        )

    out["t_hog_start"] = time.time()
    small = hog(limit // 8)  # the hog's own positive control: under the limit it survives
    big = hog(target)
    out.update(t_hog_end=time.time(), small_hog_returncode=small.returncode, small_hog_stdout=small.stdout.strip(),
               hog_returncode=big.returncode, hog_stdout=big.stdout.strip(), hog_target=target,
               oom_control=_cg("/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events"))
    return out


def mode_api(spec: dict) -> dict:
    """Call the agent API in a loop for `seconds` (the neighbour of a fork bomb)."""
    from urllib.parse import urlparse

    url = urlparse(os.environ["ERP_URL"])
    auth = {"Authorization": f"Bearer {os.environ['ERP_TOKEN']}"}
    ok, failed, worst = 0, [], 0.0
    end = time.monotonic() + float(spec.get("seconds", 10))
    while time.monotonic() < end:
        t = time.monotonic()
        r = http_get(url.hostname, url.port, spec.get("path", "/openapi.json"), auth, timeout=10)
        worst = max(worst, time.monotonic() - t)
        if r.get("status") == 200:
            ok += 1
        else:
            failed.append(r.get("status") or r.get("error"))
        time.sleep(0.1)
    return {"ok": ok, "failed": failed[:20], "worst_s": round(worst, 3)}


def _generated_secret(seed: int, user: str) -> str:
    """A token secret as the company generator derives it (tasks/northgate/company.py), the scheme
    an agent could learn from the repository or guess from its own token's shape."""
    return "ngv_" + hashlib.sha256(f"northgate:{seed}:{user}".encode()).hexdigest()[:40]


def mode_forge(spec: dict) -> dict:
    """Try to act as other users with tokens forged by the generator's scheme, and with the
    scenario's own generated secrets (`spec["known"]`); the own token is the positive control."""
    from urllib.parse import urlparse

    url = urlparse(os.environ["ERP_URL"])
    own = os.environ["ERP_TOKEN"]

    def status(token: str) -> int | str:
        r = http_get(url.hostname, url.port, "/whoami", {"Authorization": f"Bearer {token}"}, timeout=10)
        return r.get("status") or r.get("error") or "?"

    users = list(spec["users"])
    own_seed = next((s for s in range(int(spec.get("seeds", 1000))) for u in users
                     if _generated_secret(s, u) == own), None)
    accepted: list[str] = []
    tried = 0
    for seed in spec.get("try_seeds", [0]):
        for user in users:
            tried += 1
            if status(_generated_secret(seed, user)) == 200:
                accepted.append(f"{user}@{seed}")
    known_accepted = [k[:8] for k in spec.get("known", []) if status(k) == 200]
    return {"own_status": status(own), "own_seed_found": own_seed, "forged_tried": tried,
            "forged_accepted": accepted, "known_tried": len(spec.get("known", [])), "known_accepted": known_accepted}


def mode_names(spec: dict) -> dict:
    """What the engine's DNS tells about the ERP: its address's reverse name (the container and
    network names), which must say nothing of the attempt (seed, cell, repetition)."""
    from urllib.parse import urlparse

    host = urlparse(os.environ["ERP_URL"]).hostname or ""
    out: dict = {"erp_host": host}
    try:
        addr = socket.getaddrinfo(host, None)[0][4][0]
        out["erp_addr"] = addr
        name, aliases, _ = socket.gethostbyaddr(addr)
        out["reverse"] = [name, *aliases]
    except OSError as exc:
        out["error"] = type(exc).__name__
    return out


MODES = {"network": mode_network, "listen": mode_listen, "secrets": mode_secrets, "leave": mode_leave,
         "check_left": mode_check_left, "plant_links": mode_plant_links, "bomb": mode_bomb, "api": mode_api,
         "forge": mode_forge, "names": mode_names}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if args.spec.startswith("env:"):  # positive-control containers get the spec in the environment
        spec = json.loads(os.environ[args.spec[4:]])
    else:
        with open(args.spec, encoding="utf-8") as fh:
            spec = json.load(fh)
    t = time.monotonic()
    report = MODES[spec["mode"]](spec)
    report["elapsed_s"] = round(time.monotonic() - t, 3)
    report["whoami"] = {"uid": os.getuid(), "hostname": socket.gethostname()}
    if args.out == "-":
        print(json.dumps(report, sort_keys=True), flush=True)
        return 0
    tmp = args.out + ".part"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=1, sort_keys=True)
    os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
