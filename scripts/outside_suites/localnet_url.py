"""solana-py's integration suite against our node (docs/localnet-suites.md): stands in for pytest-docker: a fresh `python -m localnet` per test module (the
suite's own --container-scope=module), at 127.0.0.1 on free ports, with the flags upstream's docker-compose gives its validator.
Only the URL changes."""
import os, shutil, socket, subprocess, tempfile, time
import pytest

PROJECT = os.environ.get("LOCALNET_PROJECT", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

def _free_pair():
    while True:
        s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
        t = socket.socket()
        try:
            t.bind(("127.0.0.1", port + 1)); t.close(); return port
        except OSError:
            t.close()

class _Services:
    def __init__(self, port):
        self._ports = {8899: port, 8900: port + 1}
    def port_for(self, service, container_port):
        return self._ports[container_port]
    def wait_until_responsive(self, check, timeout, pause, clock=time.perf_counter):
        end = clock() + timeout
        while clock() < end:
            if check():
                return
            time.sleep(pause)
        raise Exception("Timeout reached while waiting on service!")

@pytest.fixture(scope="session")
def docker_ip():
    return "127.0.0.1"

@pytest.fixture(scope="module")
def docker_services(request):
    data = tempfile.mkdtemp(prefix="solpy-node-")
    port = _free_pair()
    log = open(os.path.join(data, "node.log"), "w")
    # --rpc-pubsub-enable-block-subscription: upstream's tests/docker-compose.yml starts its validator with Agave's flag of that
    # name (SOLANA_RUN_SH_VALIDATOR_ARGS; its --rpc-pubsub-enable-vote-subscription has no counterpart: no votes here).
    proc = subprocess.Popen([os.path.join(PROJECT, ".venv/bin/python"), "-m", "localnet", "--host", "127.0.0.1",
                             "--port", str(port), "--data-dir", os.path.join(data, "ledger"), "--rpc-pubsub-enable-block-subscription"],
                            cwd=PROJECT, stdout=log, stderr=subprocess.STDOUT)
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close(); break
        except OSError:
            time.sleep(0.1)
    print(f"\n[localnet pid {proc.pid} port {port} data {data} for {request.module.__name__}]")
    yield _Services(port)
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill(); proc.wait()
    log.close()
    if not os.environ.get("KEEP_NODE_DATA"):
        shutil.rmtree(data, ignore_errors=True)
