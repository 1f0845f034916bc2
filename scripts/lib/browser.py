#!/usr/bin/env python3
"""Opens a page in headless Chromium, evaluates JavaScript in it, and takes a
screenshot: what the page tests (Tests/IntegrationTests/PageBrowserTests.swift) use
to look at purgefs's pages in a real browser.

    browser.py URL [--screenshot FILE.png] [--size WxH] [--dark]
               [--eval EXPRESSION]... [--timeout SECONDS]

Chromium is driven over --remote-debugging-pipe (the DevTools protocol on
descriptors 3 and 4, one JSON message per NUL-terminated record): nothing
listens on a port. Each EXPRESSION is evaluated in the page after its load
event, in order, awaited when it is a promise; stdout gets one JSON array
with their values. Any exception, or a page that does not load within the
timeout, is an error (exit 1, the reason on stderr).

The standard library only; CHROMIUM (default: chromium on PATH) names the binary.
"""
import argparse
import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile


class Browser:
    def __init__(self, binary, profile):
        commands_read, self.commands = os.pipe()
        self.replies, replies_write = os.pipe()

        def descriptors():
            # Out of the way first, in case a pipe end is 3 or 4 already;
            # dup2 makes the targets inheritable.
            high_read, high_write = os.dup(commands_read), os.dup(replies_write)
            os.dup2(high_read, 3)
            os.dup2(high_write, 4)

        self.process = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking", "--disable-sync", "--hide-scrollbars",
             "--remote-debugging-pipe", "--user-data-dir=" + profile, "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            preexec_fn=descriptors, pass_fds=(3, 4))
        os.close(commands_read)
        os.close(replies_write)
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def _read(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.replies, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed its pipe: " + self.process.stderr.read().decode(errors="replace")[-2000:])
            self.buffer += chunk
        record, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(record)

    def call(self, method, session=None, **params):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self.commands, data):]
        while True:
            reply = self._read()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method, session):
        while True:
            for index, event in enumerate(self.events):
                if event.get("method") == method and event.get("sessionId") == session:
                    del self.events[index]
                    return event
            self.events.append(self._read())

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--screenshot")
    parser.add_argument("--size", default="1000x800")
    parser.add_argument("--dark", action="store_true")
    parser.add_argument("--eval", action="append", default=[])
    parser.add_argument("--timeout", type=float, default=60)
    options = parser.parse_args()
    width, height = (int(part) for part in options.size.split("x"))

    def expired(signum, frame):
        raise TimeoutError(f"the page did not finish within {options.timeout} s")
    signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, options.timeout)

    binary = os.environ.get("CHROMIUM") or shutil.which("chromium")
    if not binary:
        print("browser.py: no chromium on PATH", file=sys.stderr)
        return 1
    profile = tempfile.mkdtemp(prefix="purgefs-browser.")
    browser = Browser(binary, profile)
    try:
        target = browser.call("Target.createTarget", url="about:blank")["targetId"]
        session = browser.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        browser.call("Page.enable", session)
        browser.call("Emulation.setDeviceMetricsOverride", session, width=width, height=height,
                     deviceScaleFactor=1, mobile=False)
        browser.call("Emulation.setEmulatedMedia", session,
                     features=[{"name": "prefers-color-scheme", "value": "dark" if options.dark else "light"}])
        navigation = browser.call("Page.navigate", session, url=options.url)
        if navigation.get("errorText"):
            raise RuntimeError(f"cannot open {options.url}: {navigation['errorText']}")
        browser.wait_for("Page.loadEventFired", session)
        values = []
        for expression in options.eval:
            result = browser.call("Runtime.evaluate", session, expression=expression, awaitPromise=True,
                                  returnByValue=True)
            if "exceptionDetails" in result:
                details = result["exceptionDetails"]
                text = details.get("exception", {}).get("description") or details.get("text")
                raise RuntimeError(f"{expression[:80]}: {text}")
            values.append(result["result"].get("value"))
        if options.screenshot:
            shot = browser.call("Page.captureScreenshot", session, format="png")
            with open(options.screenshot, "wb") as file:
                file.write(base64.b64decode(shot["data"]))
        json.dump(values, sys.stdout)
        print()
        return 0
    except Exception as error:
        print(f"browser.py: {error}", file=sys.stderr)
        return 1
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        browser.close()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
