#!/usr/bin/env python3
"""ctest DeployFiles: the deployment files that no cluster runs here, checked as far as a machine
without Kubernetes or Docker can check them.

- deploy/k8s/requant-indexed-job.yaml parses (python3-yaml) and says what scripts/shard-job and
  docs/scale.md need: a ReadWriteMany claim, an Indexed Job with completions = SHARDS, per-index
  retries with exit status 2 failing its index, restartPolicy Never, IN/OUT/SPLIT_MAX_SIZE set,
  the input mounted read-only and the output writable from the same claim, and a command whose
  options the real shard-job accepts (run here with --count on a vendored model).
- deploy/Dockerfile's runtime stage installs the Debian package of every shared library the
  built tools link (ldd + dpkg -S), so the image's tools start.

usage: deploy-files.py BIN_DIR
"""
import os
import re
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BIN = os.path.abspath(sys.argv[1])
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def manifest():
    path = os.path.join(ROOT, "deploy/k8s/requant-indexed-job.yaml")
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    kinds = {d.get("kind"): d for d in docs}
    check(set(kinds) == {"PersistentVolumeClaim", "Job"}, f"documents: {sorted(kinds)}")
    pvc, job = kinds["PersistentVolumeClaim"], kinds["Job"]
    check("ReadWriteMany" in pvc["spec"]["accessModes"], "the claim is not ReadWriteMany")
    check(job["apiVersion"] == "batch/v1", "Job apiVersion")
    spec = job["spec"]
    n = spec.get("completions")
    check(spec.get("completionMode") == "Indexed", "completionMode is not Indexed")
    check(isinstance(n, int) and n >= 1, f"completions {n!r}")
    check(1 <= spec.get("parallelism", 1) <= n, "parallelism outside 1..completions")
    check(isinstance(spec.get("backoffLimitPerIndex"), int), "no backoffLimitPerIndex")
    rules = spec.get("podFailurePolicy", {}).get("rules", [])
    check(any(r.get("action") == "FailIndex" and r.get("onExitCodes", {}).get("values") == [2] for r in rules),
          "exit status 2 does not fail its index")
    pod = spec["template"]["spec"]
    check(pod.get("restartPolicy") == "Never", "restartPolicy is not Never")
    (c,) = pod["containers"]
    check(c["name"] == "shard" and any(r.get("onExitCodes", {}).get("containerName") == c["name"] for r in rules),
          "the failure policy names another container")
    env = {e["name"]: e.get("value") for e in c.get("env", [])}
    for k in ("IN", "OUT", "SPLIT_MAX_SIZE", "SHARDS"):
        check(k in env, f"env {k} missing")
    check(env.get("SHARDS") == str(n), f"SHARDS {env.get('SHARDS')!r} != completions {n}")
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
    vols = {v["name"]: v for v in pod.get("volumes", [])}

    def mount_of(p):
        hits = [m for mp, m in mounts.items() if p.startswith(mp.rstrip("/") + "/")]
        return hits[0] if hits else None

    for key, writable in (("IN", False), ("OUT", True)):
        m = mount_of(env.get(key, ""))
        check(m is not None, f"{key} {env.get(key)!r} is on no mounted volume")
        if m:
            check(bool(m.get("readOnly")) != writable, f"{key}'s mount is {'read-only' if not writable else 'writable'}")
            v = vols.get(m["name"], {})
            check(v.get("persistentVolumeClaim", {}).get("claimName") == pvc["metadata"]["name"],
                  f"{key}'s volume is not the claim")
    cmd = c["command"]
    check(cmd[0] == "shard-job", f"command {cmd[0]!r}")
    # The options go to the real shard-job (and through it to gguf-requant's dry run).
    with tempfile.TemporaryDirectory() as t:
        e = dict(os.environ, OIW_BIN=BIN, IN=os.path.join(ROOT, "tests/data/models/mini-llama-f16.gguf"),
                 OUT=os.path.join(t, "m.gguf"), SPLIT_MAX_SIZE=env["SPLIT_MAX_SIZE"])
        for k in ("SHARD", "SHARDS", "SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"):
            e.pop(k, None)
        r = subprocess.run([os.path.join(ROOT, "scripts/shard-job"), "--count", *cmd[1:]], env=e,
                           capture_output=True, text=True)
        check(r.returncode == 0 and r.stdout.strip().isdigit(), f"shard-job --count {cmd[1:]}: {r.stderr.strip()}")


def dockerfile():
    text = open(os.path.join(ROOT, "deploy/Dockerfile")).read()
    runtime = text[text.rindex("FROM "):]
    m = re.search(r"apt-get install[^\n]*--no-install-recommends((?:[^\n]|\\\n)*)", runtime)
    check(m is not None, "no apt-get install in the runtime stage")
    installed = set(m.group(1).replace("\\", " ").split("&&")[0].split()) if m else set()
    libs = set()
    for tool in sorted(os.listdir(BIN)):
        p = os.path.join(BIN, tool)
        if os.access(p, os.X_OK) and not tool.startswith(("oiw_tests", "fuzz_", "bench_")) and os.path.isfile(p):
            out = subprocess.run(["ldd", p], capture_output=True, text=True).stdout
            libs.update(re.findall(r"=> (/\S+)", out))
    base = {"libc6", "libstdc++6", "libgcc-s1"}  # in debian:12-slim
    for lib in sorted(libs):
        r = subprocess.run(["dpkg", "-S", os.path.realpath(lib)], capture_output=True, text=True)
        if r.returncode != 0:
            r = subprocess.run(["dpkg", "-S", lib], capture_output=True, text=True)
        if r.returncode != 0:
            continue  # not from a package (a sanitizer runtime in a sanitizer build)
        pkg = r.stdout.split(":")[0]
        if re.match(r"lib(a|ub|t|l)san\d", pkg):
            continue  # a sanitizer build's runtime, not the image's
        check(pkg in base or pkg in installed, f"{os.path.basename(lib)} (package {pkg}) is not installed by the image")


manifest()
dockerfile()
for f in failures:
    print(f"DeployFiles: {f}", file=sys.stderr)
sys.exit(1 if failures else 0)
