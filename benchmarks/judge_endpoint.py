"""``--judge-endpoint`` client throughput: answers per second against a loopback server that
answers each request after a fixed delay, at several concurrencies (``--judge-batch-size``).

The ideal is ``concurrency / delay``; the target is 80% of it at 64 requests in flight and a
200 ms server (320 answers/s ideal). The server is a threaded ``http.server`` on 127.0.0.1
with keep-alive, started and stopped here; no other address is contacted.

    python benchmarks/judge_endpoint.py [--delay 0.2] [--concurrency 16 64] [--questions 1280]
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Server(ThreadingHTTPServer):
    request_queue_size = 256
    daemon_threads = True


def handler(delay: float):
    class Delayed(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out in two writes, as servers with TCP_NODELAY send them

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            time.sleep(delay)
            data = json.dumps({"choices": [{"message": {"role": "assistant", "content": "Yes"}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    return Delayed


def main() -> None:
    from idc_toolkit.judge.endpoint import EndpointJudge
    from idc_toolkit.judge.questions import ask

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--questions", type=int, default=1280)
    a = ap.parse_args()
    server = Server(("127.0.0.1", 0), handler(a.delay))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    prompts = [p for k in range(a.questions) for p in ask(str(k), f"the red cube number {k} moved left.",
                                                            [f"cube {k} moved."], [f"cube {k} moved."], False).prompts()]
    prompts = prompts[:a.questions]
    print(f"| in flight | answers/s | ideal ({a.delay:g} s server) | share of ideal |")
    print("| ---: | ---: | ---: | ---: |")
    try:
        for n in a.concurrency:
            judge = EndpointJudge("bench", url, concurrency=n)
            judge.answer(prompts[:n])  # connections opened, threads started
            start = time.perf_counter()
            answers = judge.answer(prompts)
            rate = len(prompts) / (time.perf_counter() - start)
            judge.close()
            assert set(answers) == {"yes"}, set(answers)
            ideal = n / a.delay
            print(f"| {n} | {rate:.0f} | {ideal:.0f} | {rate / ideal:.0%} |")
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    main()
