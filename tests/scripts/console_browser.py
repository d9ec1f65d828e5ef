#!/usr/bin/python3
"""The web console in a real browser (docs/console.md): headless Chromium driven by Selenium.

Usage: console_browser.py REPLAYGATE SOURCE_DIR WORK_DIR [SCREENSHOT_DIR]

Builds a plan of the shipped dump into a fresh ledger, adds an operator and a viewer with `console
user add --password-stdin` and an approver with a key, who approves the plan with `plan approve`,
starts `console serve` on a free loopback port, then in the browser: signs in as the viewer (the
plan page offers no cancel), signs in as the operator, opens the plans page and the plan (the
approval counts), cancels it with a reason (a POST carrying its CSRF token and the SameSite=Strict
cookie), and opens the audit page, which shows the logs verifying. Screenshots go to
SCREENSHOT_DIR (default WORK_DIR) as console-*.png. Exit 0 passed, 1 a check failed, 2 setup.
Needs Debian's chromium, chromium-driver and python3-selenium (/usr/bin/python3).
"""
import os
import shutil
import socket
import subprocess
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


def run(args, stdin=None, cwd=None):
    r = subprocess.run(args, input=stdin, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"setup: {' '.join(args)}: exit {r.returncode}\n{r.stderr}")
    return r.stdout


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check(condition, what):
    if not condition:
        print(f"console_browser: FAILED: {what}", file=sys.stderr)
        sys.exit(1)
    print(f"console_browser: ok: {what}")


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    rg, src, work = (os.path.abspath(a) for a in sys.argv[1:4])
    shots = os.path.abspath(sys.argv[4]) if len(sys.argv) == 5 else work
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.makedirs(shots, exist_ok=True)
    digest = run([rg, "plan", "build", f"{src}/examples/letters.jsonl", "--policy",
                  f"{src}/policies/replay_gate.yaml", "--author", "alice", "--rule",
                  "known_failures:payment.capture/timeout", "--plan", "capture.plan.json",
                  "--ledger", "ledger.db", "--audit", "audit.log"], cwd=work).strip()
    passwords = {"olga": "olga's long password", "vera": "vera's long password"}
    for name, role in (("olga", "operator"), ("vera", "viewer")):
        run([rg, "console", "user", "add", name, "--role", role, "--users", "users.json",
             "--password-stdin"], stdin=passwords[name] + "\n", cwd=work)
    # bob approves the plan on the command line with his key: the console shows it counting.
    run([rg, "key", "generate", "--secret", "bob.key", "--public", "bob.pub"], cwd=work)
    run([rg, "console", "user", "add", "bob", "--role", "approver", "--users", "users.json",
         "--public-key", "bob.pub", "--password-stdin"], stdin="bob's long password\n", cwd=work)
    run([rg, "plan", "approve", "capture.plan.json", "--operator", "bob", "--sign-key", "bob.key",
         "--reason", "2 capture timeouts, reviewed", "--users", "users.json", "--ledger",
         "ledger.db", "--audit", "audit.log"], cwd=work)
    with open(os.path.join(work, "console.yaml"), "w") as f:
        f.write(f"ledger: ledger.db\nusers: users.json\npolicy: {src}/policies/replay_gate.yaml\n"
                "audit: console.audit.log\naudit_logs: [audit.log]\n")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([rg, "console", "serve", "--config", "console.yaml", "--listen",
                               f"127.0.0.1:{port}"], cwd=work, stderr=subprocess.PIPE)
    driver = None
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        o = webdriver.ChromeOptions()
        o.binary_location = "/usr/bin/chromium"
        for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                  "--window-size=1200,800"):
            o.add_argument(a)
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)

        def settle(condition):
            # A click returns before its page has loaded (a loaded machine: Argon2id at sign-in).
            try:
                WebDriverWait(driver, 30, poll_frequency=0.1).until(lambda d: condition())
            except Exception:
                pass

        def sign_in(name):
            driver.get(base + "/login")
            driver.find_element(By.NAME, "name").send_keys(name)
            driver.find_element(By.NAME, "password").send_keys(passwords[name])
            driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
            settle(lambda: driver.current_url == base + "/plans")

        driver.get(base + "/login")
        driver.save_screenshot(os.path.join(shots, "console-login.png"))
        sign_in("vera")
        check(driver.current_url == base + "/plans", "the viewer lands on the plans page")
        driver.get(base + "/plans/" + digest)
        check("Cancel the plan" not in driver.page_source, "a viewer is offered no cancel")
        driver.find_element(By.CSS_SELECTOR, "form.who button").click()
        settle(lambda: driver.current_url == base + "/login")
        check(driver.current_url == base + "/login", "logout returns to the sign-in page")

        sign_in("olga")
        check(digest[:20] in driver.page_source, "the plans page lists the plan")
        driver.save_screenshot(os.path.join(shots, "console-plans.png"))
        driver.find_element(By.PARTIAL_LINK_TEXT, digest[:20]).click()
        settle(lambda: digest in driver.page_source)
        check(digest in driver.page_source and "alice" in driver.page_source,
              "the plan page shows its digest and author")
        check("2 capture timeouts, reviewed" in driver.page_source
              and ">counts<" in driver.page_source, "bob's signed approval is shown counting")
        driver.save_screenshot(os.path.join(shots, "console-plan.png"))
        driver.find_element(By.NAME, "reason").send_keys("captures retried by hand instead")
        driver.find_element(By.CSS_SELECTOR, "form.box button").click()
        settle(lambda: "captures retried by hand instead" in driver.page_source)
        check("cancelled" in driver.page_source and "captures retried by hand instead"
              in driver.page_source, "the cancel is recorded and shown")
        driver.save_screenshot(os.path.join(shots, "console-plan-cancelled.png"))
        driver.get(base + "/audit")
        check(driver.page_source.count(">verifies<") == 2, "both audit logs verify")
        driver.save_screenshot(os.path.join(shots, "console-audit.png"))
        status = run([rg, "plan", "status", "capture.plan.json", "--ledger", "ledger.db"], cwd=work)
        check("state cancelled" in status, "plan status says cancelled")
        log = open(os.path.join(work, "console.audit.log")).read()
        check('"act":"plan_cancel"' in log and '"act":"plan_cancelled"' in log,
              "the console's log holds the act and the plan's entry")
    finally:
        if driver is not None:
            driver.quit()
        server.terminate()
        code = server.wait(timeout=10)
    check(code == 0, "SIGTERM stops the server, exit 0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
