"""One job, three engines, one folder: torchrun ranks (gloo, CPU) and Ray Data actors (a local
Ray instance with 2 CPUs) write byte-identical folders to one process; kill -9 then rerun
finishes the same folder."""

import hashlib
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from idc_toolkit.masks.column import add_change_masks
from idc_toolkit.runs import EngineArgs

from conftest import REPO, kill_mid_run, ranks_stderr


def _files(out):
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def one_process(demo_dataset, tmp_path_factory):
    out = tmp_path_factory.mktemp("engines") / "one"
    assert add_change_masks(demo_dataset, out, rows_per_part=8, device="cpu", progress=False).complete
    return out


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray instance (2 CPUs) for this module's Ray tests."""
    pytest.importorskip("ray")
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _store_files(uri):
    """``{path: sha256}`` of every object under ``uri``, read through pyarrow as any reader would."""
    from pyarrow.fs import FileSelector, FileType

    from idc_toolkit.stores import Store

    store = Store.open(uri)
    found = {}
    for info in store.fs.get_file_info(FileSelector(store.root, recursive=True)):
        if info.type == FileType.File:
            with store.fs.open_input_stream(info.path) as fh:
                found[info.path[len(store.root) + 1:]] = hashlib.sha256(fh.read()).hexdigest()
    return found


def _store_keys(uri):
    """Every object key under ``uri``'s prefix, directory markers included, as S3 lists them."""
    from urllib.parse import parse_qs, urlparse

    import boto3

    parsed = urlparse(uri)
    endpoint = parse_qs(parsed.query)["endpoint_override"][0]
    client = boto3.client("s3", endpoint_url=f"http://{endpoint}", region_name="us-east-1")
    prefix = parsed.path.lstrip("/") + "/"
    return sorted(o["Key"][len(prefix):] for o in client.list_objects_v2(Bucket=parsed.netloc, Prefix=prefix).get("Contents", []))


def test_an_s3_out_is_staged_here_and_published_as_the_local_engine_writes_it(demo_dataset, one_process, tmp_path,
                                                                                monkeypatch, s3_store):
    """``--out s3://...`` (moto's S3 on loopback, through pyarrow's S3 client): the published
    objects are the local engine's folder, file for file and byte for byte, with nothing of the
    run's state left there; the same command again computes nothing, and neither does a machine
    without the staging folder: the finished run there is its result."""
    import shutil

    import idc_toolkit.masks.column as masks_column

    monkeypatch.setenv("IDC_CACHE", str(tmp_path / "cache"))
    uri = s3_store("masks/one")
    result = add_change_masks(demo_dataset, uri, rows_per_part=8, device="cpu", progress=False)
    assert result.complete and result.parts_written == result.parts_total > 1
    assert _store_files(uri) == _files(one_process)
    # no empty "data/" object beside the data, no state: at most the prefix's own marker
    assert [k for k in _store_keys(uri) if k] == sorted(_files(one_process))
    assert _files(result.out_dir) == _files(one_process)  # the staging folder keeps the finished copy

    def never(*args, **kwargs):
        raise AssertionError("a finished, published run computed masks again")

    monkeypatch.setattr(masks_column, "compute_change_mask", never)
    assert add_change_masks(demo_dataset, uri, rows_per_part=8, device="cpu", progress=False).already_done
    shutil.rmtree(tmp_path / "cache")  # another machine, or a cleared cache
    again = add_change_masks(demo_dataset, uri, rows_per_part=8, device="cpu", progress=False)
    assert again.already_done and _files(again.out_dir) == _files(one_process)


def test_two_torchrun_ranks_publish_to_s3_what_one_process_writes(demo_dataset, one_process, tmp_path, monkeypatch,
                                                                  s3_store):
    """Ranks share one staging folder and each shares its own parts at the destination; rank 0
    publishes the local engine's folder, and nothing of the run's state is left there. The
    destination held a run with other settings: rank 0 replaces it (--overwrite), then both work."""
    from idc_toolkit.masks import MaskParams

    uri = s3_store("masks/ranks")
    env = {**os.environ, "IDC_CACHE": str(tmp_path / "cache")}
    monkeypatch.setenv("IDC_CACHE", str(tmp_path / "cache_first"))
    add_change_masks(demo_dataset, uri, MaskParams(delta=60.0), rows_per_part=8, device="cpu", progress=False)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m",
           "idc_toolkit.cli.precompute", "masks", "--dataset", str(demo_dataset), "--out", uri, "--device", "cpu",
           "--rows-per-part", "8", "--no-progress", "--overwrite"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=240, env=env)
    assert proc.returncode == 0, ranks_stderr(proc.stderr)
    assert [k for k in _store_keys(uri) if k] == sorted(_files(one_process))
    assert _store_files(uri) == _files(one_process)


def test_shard_jobs_on_two_machines_complete_one_s3_run(demo_dataset, one_process, tmp_path, monkeypatch, s3_store,
                                                        capsys):
    """``--shard 0/2`` and ``--shard 1/2`` on two machines, each with its own staging folder: the
    parts each job writes are shared at the destination, so the job that finds the set complete
    publishes the local engine's folder; meanwhile, a run with other settings is refused as a
    local folder's partial run is. Parts whose sharing was lost are shared again by a rerun of
    the job that wrote them, which computes nothing again. Sharing again and copying the other
    job's parts each show a bar counting the parts."""
    from idc_toolkit.errors import RunError
    from idc_toolkit.masks import MaskParams
    from idc_toolkit.stores import Store

    uri = s3_store("masks/shards")
    monkeypatch.setenv("IDC_CACHE", str(tmp_path / "machine_a"))
    first = add_change_masks(demo_dataset, uri, rows_per_part=8, device="cpu", progress=False, engine=EngineArgs(shard=(0, 2)))
    assert not first.complete and first.parts_written > 0
    monkeypatch.setenv("IDC_CACHE", str(tmp_path / "machine_c"))
    with pytest.raises(RunError, match=r"holds a masks run with other settings \(delta: "):
        add_change_masks(demo_dataset, uri, MaskParams(delta=60.0), rows_per_part=8, device="cpu", progress=False)
    shared = [k for k in _store_keys(uri) if k.endswith(".parquet")]
    assert len(shared) == first.parts_written and all(k.startswith(".idc_run/parts-run/") for k in shared)
    Store.open(uri).remove(".idc_run/parts-run")  # machine A's sharing lost (a network failure, say)
    monkeypatch.setenv("IDC_CACHE", str(tmp_path / "machine_a"))
    capsys.readouterr()
    again = add_change_masks(demo_dataset, uri, rows_per_part=8, device="cpu", progress=True, engine=EngineArgs(shard=(0, 2)))
    assert not again.complete and again.parts_written == 0  # nothing computed, its parts shared again
    assert re.search(rf"sharing parts with {re.escape(uri.split('?')[0])}: 100%.* {first.parts_written}/{first.parts_written} ",
                     capsys.readouterr().err)
    monkeypatch.setenv("IDC_CACHE", str(tmp_path / "machine_b"))
    second = add_change_masks(demo_dataset, uri, rows_per_part=8, device="cpu", progress=True, engine=EngineArgs(shard=(1, 2)))
    assert second.complete and first.parts_written + second.parts_written == second.parts_total
    copied = re.findall(r"copying \w+ parts from s3://\S+: 100%.* (\d+)/\1 ", capsys.readouterr().err)
    assert sum(int(n) for n in copied) == first.parts_written, copied
    assert _store_files(uri) == _files(one_process)  # nothing of the parts is left there


def test_a_dataset_on_s3_is_read_through_a_local_copy_of_its_version(demo_dataset, one_process, tmp_path, monkeypatch,
                                                                      s3_store):
    """``--dataset s3://...``: the masks of a dataset copied to S3 are the masks of the local folder,
    byte for byte (the card names the source by its name and content, which the copy keeps). An
    unchanged store is not copied again; a rewritten file is a new version with a copy of its
    own, and the copy a run may still be reading is left as it was."""
    from idc_toolkit.errors import RunError
    from idc_toolkit.stores import Store, input_folder

    monkeypatch.setenv("IDC_CACHE", str(tmp_path / "cache"))
    uri = s3_store("datasets/clevr_change_demo")  # the local folder's name, as a card names its source
    store = Store.open(uri)
    for entry in sorted(demo_dataset.iterdir()):
        store.upload(entry, entry.name)
    out = tmp_path / "masks"
    assert add_change_masks(uri, out, rows_per_part=8, device="cpu", progress=False).complete
    assert _files(out) == _files(one_process)
    first = input_folder(uri, RunError)
    copying = []
    monkeypatch.setattr(Store, "download", lambda self, name, local, on_bytes=None: copying.append(name))
    assert input_folder(uri, RunError) == first and copying == []
    monkeypatch.undo()
    monkeypatch.setenv("IDC_CACHE", str(tmp_path / "cache"))
    store.write_text("build_report.json", '{"rewritten": true}')
    second = input_folder(uri, RunError)
    assert second != first and (tmp_path / "cache") in Path(second).parents
    assert (Path(second) / "build_report.json").read_text() == '{"rewritten": true}'
    assert (Path(first) / "build_report.json").read_bytes() == (demo_dataset / "build_report.json").read_bytes()
    # two processes of one machine (torchrun's ranks) asking at once: one copies, the other waits for it
    from concurrent.futures import ThreadPoolExecutor

    store.write_text("build_report.json", '{"rewritten": 2}')
    copied, original = [], Store.download
    monkeypatch.setattr(Store, "download", lambda self, name, local, on_bytes=lambda n: None:
                        (copied.append(name), original(self, name, local, on_bytes))[1])
    with ThreadPoolExecutor(2) as pool:
        third = set(pool.map(lambda _: input_folder(uri, RunError), range(2)))
    assert len(third) == 1 and third.isdisjoint({first, second})
    assert sorted(copied) == sorted(p.relative_to(demo_dataset).as_posix() for p in demo_dataset.rglob("*") if p.is_file())


def test_store_keys_that_are_not_plain_paths_are_refused_never_followed(tmp_path, monkeypatch, s3_store):
    """An object named ``data/../../../escaped.txt`` in a dataset on S3 (S3 keys are any text):
    the copy is refused in one line naming it; nothing lands outside the cache, nothing is
    skipped unsaid."""
    from urllib.parse import parse_qs, urlparse

    import boto3

    from idc_toolkit.errors import RunError
    from idc_toolkit.stores import input_folder

    monkeypatch.setenv("IDC_CACHE", str(tmp_path / "cache" / "inner"))
    uri = s3_store("evil/ds")
    parsed = urlparse(uri)
    client = boto3.client("s3", endpoint_url=f"http://{parse_qs(parsed.query)['endpoint_override'][0]}", region_name="us-east-1")
    for key in ("README.md", "data/../../../escaped.txt"):
        client.put_object(Bucket=parsed.netloc, Key=f"evil/ds/{key}", Body=b"x")
    with pytest.raises(RunError, match=r"^--dataset .*: cannot be read \(its object 'data/\.\./\.\./\.\./escaped.txt' "
                                       r"is not a plain path\)$"):
        input_folder(uri, RunError)
    assert not list(tmp_path.rglob("escaped.txt"))


def test_ray_actors_publish_to_s3_what_the_local_engine_writes(demo_dataset, one_process, tmp_path, monkeypatch,
                                                               s3_store, local_ray):
    """Ray Data actors write the local engine's folder and publish it to an object store (a
    ``file://`` --out is tested in test_output_safety, the same staging path)."""
    monkeypatch.setenv("IDC_CACHE", str(tmp_path / "cache"))
    uri = s3_store("masks/ray")
    assert add_change_masks(demo_dataset, uri, rows_per_part=8, device="cpu", progress=False,
                            engine=EngineArgs(engine="ray", ray_actors=2)).complete
    assert _store_files(uri) == _files(one_process)


class DiesOnce:
    """A row task whose process exits (as a killed actor does) in the middle of its third part,
    once: the marker file says it already did."""

    batch_size = 2

    def __init__(self, marker: str):
        from datasets import Features, Value

        self.marker = marker
        self.features = Features({"pair_id": Value("string"), "caption": Value("string")})

    def setup(self, device: str) -> None:
        pass

    def __call__(self, split, rows, start):
        import os
        from pathlib import Path

        from idc_toolkit.runs import PartOutput

        if start == 10 and not os.path.exists(self.marker):  # part 2 (rows 8..11), its second batch only:
            # `>= 10` also fired on part 3's first batch when that actor got there first, before any partial
            Path(self.marker).write_text("died here")
            os._exit(1)
        return PartOutput([{"pair_id": r["pair_id"], "caption": r["pair_id"].upper()} for r in rows])


def test_an_actor_that_dies_mid_part_is_retried_and_the_output_is_identical(tmp_path, local_ray):
    import ray.cloudpickle

    from idc_toolkit.runs import RunFolder, run_job
    from idc_toolkit.runs.rows import ListRows

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the actors import this test module by value
    rows = ListRows([{"pair_id": f"p{i}"} for i in range(16)])

    def run(out, engine, marker):
        folder = RunFolder(out, "toy", {"rows": 16}, card_record=False).open()
        outcome = run_job(folder, {"test": rows}, DiesOnce(str(marker)), rows_per_part=4, progress=False,
                          engine=EngineArgs(engine=engine, ray_actors=2))
        assert outcome.complete
        return _files(out / ".idc_run" / "parts")

    (tmp_path / "never").write_text("the local run does not die")
    local = run(tmp_path / "local", "local", tmp_path / "never")
    marker = tmp_path / "died"
    on_ray = run(tmp_path / "ray", "ray", marker)
    assert marker.read_text() == "died here"
    # actors write nothing: their parts come back as blocks and the driver writes them, so the
    # dead actor left no half-written file, and the retried part is the same bytes
    assert on_ray == local


CHILD = """
import sys, time
import idc_toolkit.masks.column as m
original = m.compute_change_mask
m.compute_change_mask = lambda *a, **k: (time.sleep(0.02), original(*a, **k))[1]
m.add_change_masks(sys.argv[1], sys.argv[2], rows_per_part=8, device="cpu", progress=False)
"""


def test_kill_9_during_the_pass_then_rerun_is_identical(demo_dataset, one_process, tmp_path):
    out = tmp_path / "killed"
    rng = random.Random(0)
    for _ in range(2):  # inside the part after the next one written (a part takes >= 0.16 s here)
        kill_mid_run(CHILD, [demo_dataset, out], out, 1, 0.1, rng)
    assert add_change_masks(demo_dataset, out, rows_per_part=8, device="cpu", progress=False).complete
    assert _files(out) == _files(one_process)


def test_ray_placement_follows_the_device_and_the_cluster():
    """--device cuda under --engine ray asks for a GPU per actor, the pool follows the GPUs (not
    the CPUs) for GPU work, never more actors than parts; a cluster without GPUs says so."""
    from idc_toolkit.errors import RunError
    from idc_toolkit.runs.engine import ray_placement

    cluster = {"CPU": 64.0, "GPU": 4.0}
    assert ray_placement("cuda", 0.0, None, 100, cluster) == ("cuda", 1.0, 4)
    assert ray_placement("cuda:0", 0.5, None, 100, cluster) == ("cuda", 0.5, 8)
    assert ray_placement("cpu", 0.0, None, 100, cluster) == ("cpu", 0.0, 64)
    assert ray_placement("cpu", 0.0, None, 3, cluster) == ("cpu", 0.0, 3)
    assert ray_placement("cpu", 0.0, 2, 100, cluster) == ("cpu", 0.0, 2)
    with pytest.raises(RunError, match="has 0 GPU"):
        ray_placement("cuda", 0.0, None, 10, {"CPU": 8.0})


def test_a_console_script_ends_the_process_group_its_work_joined_and_keeps_a_callers(tmp_path):
    """Left to the interpreter's exit, gloo's threads abort a rank whose work is done (SIGABRT,
    "terminate called without an active exception"), failing a torchrun job that finished: the
    console scripts' ``run`` destroys a group made during the command (accelerate's for the
    Trainer, the engine's) and leaves one its caller made."""
    import torch.distributed as dist

    from idc_toolkit.cli.common import run
    from idc_toolkit.errors import IDCError

    def join(name):
        dist.init_process_group("gloo", init_method=(tmp_path / name).as_uri(), rank=0, world_size=1)

    try:
        assert run("idc-test", lambda: join("made_by_the_work") or 0) == 0
        assert not dist.is_initialized()

        def fails():
            join("made_then_failed")
            raise IDCError("bad input")

        assert run("idc-test", fails) == 1
        assert not dist.is_initialized()
        join("the_callers")
        assert run("idc-test", lambda: 0) == 0
        assert dist.is_initialized()
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def test_the_engines_process_group_is_ended_before_the_interpreter_exits(tmp_path):
    """A Python caller of the engine (not a console script) under torchrun: the group
    ``init_distributed`` made is destroyed at exit, before the interpreter's finalization."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = ("import atexit, torch.distributed as dist\n"
            "atexit.register(lambda: print('in a group at exit:', dist.is_initialized()))\n"  # runs after the toolkit's
            "from idc_toolkit.runs.ranks import init_distributed\n"
            "init_distributed()\n"
            "print('in a group:', dist.is_initialized())\n")
    env = {**os.environ, "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": str(port)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split("\n")[:2] == ["in a group: True", "in a group at exit: False"], proc.stdout
