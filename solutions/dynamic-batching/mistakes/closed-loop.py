# %% id=answer-live-replay
# A client of one's own that waits for each reply before sending the next request (closed-loop): while the
# server is busy it stops sending, so it never builds the queue that the trace's users would.
import urllib.request


def closed_loop_replay(trace_ms, max_batch, max_wait_ms):
    warm_shapes()
    clock = Clock()
    records = []
    with BatchingServer(clock, max_batch, max_wait_ms) as server:
        start = clock.ms()
        for i, at in enumerate(trace_ms):
            delay = (start + at - clock.ms()) / 1000.0
            if delay > 0:
                time.sleep(delay)
            sent = clock.ms()
            body = json.dumps({"id": i, "x": base64.b64encode(request_input(i).tobytes()).decode()}).encode()
            request = urllib.request.Request(server.url, data=body, headers={"content-type": "application/json"})
            with urllib.request.urlopen(request, timeout=15) as reply:
                data = json.loads(reply.read())
            record = {"id": i, "scheduled_ms": float(at), "sent_ms": sent - start}
            for key in TIMED:
                record[key] = data[key] - start
            record.update(received_ms=clock.ms() - start, batch_id=data["batch_id"], batch_size=data["batch_size"])
            records.append(record)
    return records


live = closed_loop_replay(TRACE_OVERLOADED, *policy)
measured = latency_summary([r["received_ms"] - r["scheduled_ms"] for r in live])
