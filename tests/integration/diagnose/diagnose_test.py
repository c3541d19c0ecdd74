"""Integration tests of `safe-launch diagnose`: the real binary on files, directories, archives
and standard input, with the exit codes of the manual (0 cause named, 1 symptoms or nothing,
2 usage error).

usage: diagnose_test.py SAFE_LAUNCH [unittest args, e.g. -k json]
"""
import gzip
import io
import json
import os
import random
import subprocess
import sys
import tarfile
import tempfile
import unittest

SL = None

# Lines in the formats NCCL prints (net_ib.cc, bootstrap.cc, misc/socket.cc, init.cc).
GID_LINE = "n1:11:12 [0] NCCL INFO NET/IB: Dev 0 Port 1 qpn 4242 mtu 5 GID 0 (80FE/5A1B2CFFFE3D4E5F)\n"
RETRY_LINE = ("n1:11:12 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
              "10.0.0.2<5> with status=12 opcode=1 len=0 vendor err 129 (Send)\n")
TIMEOUT_LINE = ("[rank1]:[E1201 10:00:00.0 1 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught "
                "collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, "
                "NumelOut=1, Timeout(ms)=600000) ran for 600083 milliseconds before timing out.\n")


def diagnose(*args, stdin=None):
    p = subprocess.run([SL, "diagnose", *args], input=stdin, capture_output=True, timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


class Diagnose(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, data, mode="w"):
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, mode) as f:
            f.write(data)
        return path

    def test_a_named_cause_exits_0_with_the_json_schema_and_file_line_evidence(self):
        # Prefixed by a collector, coloured, CRLF, in two files: the rule sees both.
        a = self.write("n1-nccl.txt", "2024-05-01T10:00:00Z stdout F " + GID_LINE)
        b = self.write("job.log", "noise\r\n\x1b[31m" + RETRY_LINE.rstrip("\n") + "\x1b[0m\r\n")
        rc, out, err = diagnose("--json", a, b)
        self.assertEqual(rc, 0, err)
        j = json.loads(out)
        self.assertEqual(j["schema"], "safe-launch.diagnosis/1")
        self.assertEqual(j["causes"][0]["category"], "gid_index")
        files = {(e["file"], e["line"]) for e in j["causes"][0]["evidence"]}
        self.assertIn((a, 1), files)
        self.assertIn((b, 2), files)
        for key in ("probability", "entity", "fix"):
            self.assertIn(key, j["causes"][0])
        self.assertEqual(j["causes"][0]["entity"]["node"], "n1")

    def test_text_output_ranks_causes_and_explain_names_the_rule_and_lines(self):
        p = self.write("job.log", GID_LINE + RETRY_LINE)
        rc, out, _ = diagnose("--explain", p)
        self.assertEqual(rc, 0)
        self.assertRegex(out, r"1\. gid_index  probability [01]\.\d\d \((high|medium|low)\)")
        self.assertIn("to tell gid_index from ", out)
        self.assertIn("cond:link_local_gid", out)  # the features with their weights
        self.assertIn("job.log:1", out)
        self.assertIn("fix:", out)
        self.assertIn("gid_index.retry_with_link_local_gid -> gid_index", out)
        self.assertIn("link_local_gid: " + p + ":1", out)

    def test_symptoms_only_exit_1_with_a_differential_and_what_would_separate(self):
        p = self.write("job.log", TIMEOUT_LINE)
        rc, out, _ = diagnose("--json", p)
        self.assertEqual(rc, 1)
        j = json.loads(out)
        self.assertFalse(j["decided"])
        self.assertGreaterEqual(len(j["causes"]), 3)
        self.assertNotEqual(j["causes"][0]["category"], "unknown")
        probs = [c["probability"] for c in j["causes"]]
        self.assertEqual(probs, sorted(probs, reverse=True))
        self.assertTrue(j["separate"])
        self.assertEqual(j["symptoms"][0]["category"], "collective_timeout")

    def test_no_failure_evidence_is_unknown_with_what_would_decide(self):
        p = self.write("job.log", "n1:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.1.2.3<0>\n")
        rc, out, _ = diagnose("--json", p)
        self.assertEqual(rc, 1)
        j = json.loads(out)
        self.assertEqual(j["causes"][0]["category"], "unknown")
        self.assertNotIn("unknown", [c["category"] for c in j["causes"][1:]])
        self.assertFalse(j["named"])
        self.assertIn("NCCL_DEBUG=INFO", j["causes"][0]["decide"])

    def test_features_json_is_what_the_fit_reads(self):
        p = self.write("job.log", GID_LINE + RETRY_LINE)
        rc, out, _ = diagnose("--features", "--json", p)
        self.assertEqual(rc, 0)
        j = json.loads(out)
        self.assertEqual(j["schema"], "safe-launch.features/1")
        self.assertEqual(j["features"]["rule:gid_index.retry_with_link_local_gid"], 1)
        self.assertEqual(j["features"]["row:nccl.ib_qp_info"], 1)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "diagnosis.json")))

    def test_garbage_exits_1_and_never_crashes(self):
        rnd = random.Random(13)
        for n in (0, 1, 4096, 300000):
            data = bytes(rnd.getrandbits(8) for _ in range(n))
            data += b"NCCL WARN \xff\xfe\x1b[" + b"x" * 70000 + b"\r"  # cut line, no final newline
            p = self.write("garbage.bin", data, "wb")
            rc, out, err = diagnose("--json", p)
            self.assertEqual(rc, 1, err)
            self.assertFalse(json.loads(out)["named"])

    def test_missing_input_and_no_input_are_usage_errors(self):
        rc, _, err = diagnose(os.path.join(self.dir, "nope.log"))
        self.assertEqual(rc, 2)
        self.assertIn("nope.log", err)
        rc, _, _ = diagnose()
        self.assertEqual(rc, 2)
        rc, _, _ = diagnose("-", "-")
        self.assertEqual(rc, 2)

    def test_standard_input_is_read_with_dash(self):
        rc, out, _ = diagnose("--json", "-", stdin=(GID_LINE + RETRY_LINE).encode())
        self.assertEqual(rc, 0)
        j = json.loads(out)
        self.assertEqual(j["causes"][0]["category"], "gid_index")
        self.assertEqual(j["causes"][0]["evidence"][0]["file"], "-")

    def test_a_bundle_directory_tar_gz_and_gz_log_are_read_member_by_member(self):
        bundle = os.path.join(self.dir, "bundle")
        self.write("bundle/output/rank0.log", GID_LINE)
        self.write("bundle/node/nccl.txt", RETRY_LINE)
        self.write("bundle/fr/rank0.pkl", b"\x80\x04\x95\x00\x00binary", "wb")
        rc, out, _ = diagnose("--json", bundle)
        self.assertEqual(rc, 0)
        j = json.loads(out)
        self.assertEqual(j["causes"][0]["category"], "gid_index")
        # Binary files (dumps) are counted, not listed one line each (1024 dumps: 1 line).
        self.assertEqual(j["input"]["binary_files"], 1)
        self.assertFalse(any("rank0.pkl" in s for s in j["input"]["skipped"]))
        tgz = os.path.join(self.dir, "bundle.tar.gz")
        with tarfile.open(tgz, "w:gz") as t:
            t.add(bundle, arcname="hang-n1")
        rc, out, _ = diagnose("--json", tgz)
        self.assertEqual(rc, 0)
        j = json.loads(out)
        self.assertEqual(j["causes"][0]["category"], "gid_index")
        self.assertTrue(any(e["file"].startswith(tgz + ":hang-n1/") for e in j["causes"][0]["evidence"]))
        gz = self.write("job.log.gz", gzip.compress((GID_LINE + RETRY_LINE).encode()), "wb")
        rc, out, _ = diagnose("--json", gz)
        self.assertEqual(rc, 0)
        self.assertEqual(json.loads(out)["causes"][0]["category"], "gid_index")

    def test_a_torchrun_error_file_is_read_as_its_message(self):
        msg = {"message": {"message": "torch.OutOfMemoryError: CUDA out of memory. Tried to "
                           "allocate 2.00 GiB", "extraInfo": {"py_callstack": "Traceback ...",
                                                              "timestamp": "1"}}}
        p = self.write("error.json", json.dumps(msg))
        rc, out, _ = diagnose("--json", p)
        self.assertEqual(rc, 0)
        self.assertEqual(json.loads(out)["causes"][0]["category"], "oom_or_crash_other_rank")

    def test_a_rank_printing_progress_while_the_others_time_out_is_named_the_straggler(self):
        # srun -l output: Megatron's training_log line (' iteration {:8d}/{:8d} |' + ' consumed
        # samples: {:12d} |' + ' elapsed time per iteration (ms): {:.1f} |') on task 0 goes on
        # after tasks 1-3 report the watchdog timeout.
        def it(n):
            return ("0:  iteration %8d/  500000 | consumed samples: %12d | elapsed time per "
                    "iteration (ms): 4401.2 |\n" % (n, n * 1024))
        lines = [it(100)]
        for r in (1, 2, 3):
            lines.append("%d: " % r + TIMEOUT_LINE.replace("rank1", "rank%d" % r)
                         .replace("Rank 1", "Rank %d" % r))
        lines.append(it(101))
        p = self.write("slurm-42.out", "".join(lines))
        rc, out, err = diagnose("--json", "--explain", p)
        self.assertEqual(rc, 0, err)
        cause = json.loads(out)["causes"][0]
        self.assertEqual(cause["category"], "straggler_or_slow_rank")
        self.assertEqual(cause["entity"]["rank"], "0")
        self.assertIn((p, 5), {(e["file"], e["line"]) for e in cause["evidence"]})

    def test_pasted_py_spy_dumps_name_the_process_elsewhere(self):
        # py-spy dump's format (one "Process N:" section a process), as users paste two ranks:
        # one main thread in torch's all_reduce, the other in its DataLoader.
        text = ("Process 101: python train.py\n"
                "Python v3.10.12 (/usr/bin/python3.10)\n\n"
                "Thread 101 (idle): \"MainThread\"\n"
                "    all_reduce (torch/distributed/distributed_c10d.py:2050)\n"
                "    train_step (train.py:88)\n"
                "    <module> (train.py:120)\n"
                "Process 102: python train.py\n"
                "Python v3.10.12 (/usr/bin/python3.10)\n\n"
                "Thread 102 (idle): \"MainThread\"\n"
                "    _next_data (torch/utils/data/dataloader.py:1328)\n"
                "    __next__ (torch/utils/data/dataloader.py:633)\n"
                "    train_step (train.py:80)\n"
                "    <module> (train.py:120)\n")
        p = self.write("py-spy.txt", text)
        rc, out, err = diagnose("--json", "--no-write", p)
        self.assertEqual(rc, 0, err)
        cause = json.loads(out)["causes"][0]
        self.assertEqual(cause["category"], "straggler_or_slow_rank")
        self.assertIn("process 102", cause["why"])
        self.assertIn((p, 12), {(e["file"], e["line"]) for e in cause["evidence"]})  # _next_data

    def test_slurm_and_mpirun_banners_name_the_rank_that_died(self):
        p = self.write("job.err",
                       "[rank0]:n1:1:1 [0] NCCL WARN Net : Connection closed by remote peer; "
                       "remote process exited or there was a network error\n"
                       "slurmstepd: error: Detected 1 oom_kill event in StepId=1054.0. Some of the "
                       "step tasks have been OOM Killed.\n"
                       "srun: error: gpu03: task 5: Out Of Memory\n")
        rc, out, err = diagnose("--json", p)
        self.assertEqual(rc, 0, err)
        cause = json.loads(out)["causes"][0]
        self.assertEqual(cause["category"], "oom_or_crash_other_rank")
        self.assertEqual(cause["entity"]["node"], "gpu03")


if __name__ == "__main__":
    SL = sys.argv.pop(1)
    unittest.main()
