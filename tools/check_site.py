"""Open every page of the built book in headless Chromium, as a reader's browser would.

Fails (exit 1) on a JavaScript error (an uncaught exception or a console error), on an internal
link whose page or anchor does not exist, and on a code block that scrolls sideways at 1280 px.
Chromium is driven through the DevTools protocol over a pipe (--remote-debugging-pipe), so no
port or extra package is needed.

    python tools/check_site.py _build/html [--screenshots DIR]

With --screenshots, each page's figures are saved as PNGs, cropped as a reader sees them.
"""
import argparse
import base64
import html.parser
import json
import os
import pathlib
import subprocess
import sys
import time
import urllib.parse

CHROMIUM = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--remote-debugging-pipe",
            "--window-size=1280,2000"]

# Run in the page once it has loaded and its images too: its links, the images that did not load,
# the code blocks wider than their box, and where the figures are.
INSPECT = """(async () => {
  for (const img of document.images) img.loading = 'eager';
  await Promise.all([...document.images].map(img => img.complete ? null
                     : new Promise(done => { img.onload = img.onerror = done; })));
  return {
  links: [...document.querySelectorAll('a[href]')].map(a => a.href),
  broken_images: [...document.images].filter(img => img.naturalWidth === 0).map(img => img.src),
  wide: [...document.querySelectorAll('pre')].filter(p => p.offsetParent !== null
           && !p.closest('table, .output.text_html') && p.scrollWidth > p.clientWidth + 1)
         .map(p => ({width: p.scrollWidth, box: p.clientWidth, text: p.textContent.slice(0, 60)})),
  figures: [...document.querySelectorAll('figure[id]')].map(f => f.id),
  };
})()"""


class Browser:
    """One headless Chromium; `call` sends a DevTools command and returns its result."""

    def __init__(self):
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()

        def child_pipes():  # Chromium reads commands from fd 3 and writes replies to fd 4
            os.dup2(to_browser, 3)
            os.dup2(from_browser, 4)
            os.set_inheritable(3, True)  # dup2 onto the same number leaves close-on-exec set
            os.set_inheritable(4, True)

        self.process = subprocess.Popen(CHROMIUM + ["about:blank"], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, close_fds=False, preexec_fn=child_pipes)
        os.close(to_browser)
        os.close(from_browser)
        self._buffer, self._next_id, self.events = b"", 0, []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)

    def _message(self):
        while b"\0" not in self._buffer:
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, session=False, **params):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._message()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def wait_for(self, method, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(e.get("method") == method for e in self.events):
                return
            self.events.append(self._message())
        raise TimeoutError(method)

    def open(self, url):
        """Load `url`; returns the JavaScript errors it reported and the INSPECT result."""
        self.events = []
        self.call("Page.navigate", session=True, url=url)
        self.wait_for("Page.loadEventFired")
        time.sleep(0.5)  # scripts that run after load
        found = self.call("Runtime.evaluate", session=True, expression=INSPECT, returnByValue=True,
                          awaitPromise=True)
        return javascript_errors(self.events), found["result"]["value"]

    def screenshot(self, path, element_id):
        """A PNG of the element with this id, scrolled into view as a reader would see it."""
        where = self.call("Runtime.evaluate", session=True, returnByValue=True, expression=f"""(() => {{
            const e = document.getElementById({json.dumps(element_id)});
            e.scrollIntoView();
            const r = e.getBoundingClientRect();
            return {{x: r.x + window.scrollX, y: r.y + window.scrollY, width: r.width, height: r.height}};
        }})()""")["result"]["value"]
        data = self.call("Page.captureScreenshot", session=True, format="png", clip=dict(where, scale=1))["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self):
        self.process.kill()
        self.process.wait()


def javascript_errors(events):
    """Uncaught exceptions and console errors; a resource that cannot be fetched offline is not one."""
    errors = []
    for event in events:
        params = event.get("params", {})
        if event.get("method") == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            errors.append(details.get("exception", {}).get("description") or details["text"])
        elif event.get("method") == "Runtime.consoleAPICalled" and params["type"] == "error":
            errors.append(" ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
        elif event.get("method") == "Log.entryAdded" and params["entry"]["level"] == "error" \
                and params["entry"]["source"] != "network":
            errors.append(params["entry"]["text"])
    return errors


class Anchors(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids = set()

    def handle_starttag(self, tag, attrs):
        self.ids.update(value for name, value in attrs if name in ("id", "name") and value)


def anchors(path, cache={}):
    if path not in cache:
        parser = Anchors()
        parser.feed(path.read_text(errors="replace"))
        cache[path] = parser.ids
    return cache[path]


def broken_link(href, root):
    """Why an internal link is broken, or None (external links are not followed)."""
    url = urllib.parse.urlparse(href)
    if url.scheme != "file":
        return None
    path = pathlib.Path(urllib.parse.unquote(url.path))
    if not path.resolve().is_relative_to(root):
        return f"points outside the book: {path}"
    if path.is_dir():
        path = path / "index.html"
    if not path.exists():
        return f"no such file: {path.relative_to(root)}"
    fragment = urllib.parse.unquote(url.fragment)
    if fragment and path.suffix == ".html" and fragment not in anchors(path):
        return f"no anchor #{fragment} in {path.relative_to(root)}"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=pathlib.Path)
    parser.add_argument("--screenshots", type=pathlib.Path)
    args = parser.parse_args()
    root = args.site.resolve()
    pages = sorted(p for p in root.glob("**/*.html") if "_static" not in p.parts)
    browser, problems = Browser(), []
    try:
        for page in pages:
            errors, found = browser.open(page.as_uri())
            name = page.relative_to(root)
            problems += [f"{name}: JavaScript error: {e}" for e in errors]
            problems += [f"{name}: link {href}: {why}" for href in sorted(set(found["links"]))
                         if (why := broken_link(href, root))]
            problems += [f"{name}: image does not load: {src}" for src in found["broken_images"]]
            problems += [f"{name}: code block scrolls sideways ({w['width']} px in {w['box']} px): {w['text']!r}"
                         for w in found["wide"]]
            if args.screenshots:
                args.screenshots.mkdir(parents=True, exist_ok=True)
                for figure in found["figures"]:
                    browser.screenshot(args.screenshots / f"{page.stem}-{figure}.png", figure)
    finally:
        browser.close()
    print(f"{len(pages)} pages opened in headless Chromium: {len(problems)} problem(s)")
    print("\n".join(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
