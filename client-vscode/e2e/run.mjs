#!/usr/bin/env node
// End-to-end test of the packaged turnback extension in a real VS Code: code-server 4.100.3
// (VS Code 1.100.3) in Debian's headless chromium, driven by playwright-core. setup.sh installs
// both; this builds nothing (`npm run package` makes the .vsix). See README.md here.
//
// Usage: node client-vscode/e2e/run.mjs [--clean-machine] [path/to/turnback-X.vsix]
//   --clean-machine            the extension on a machine without turnback: no turnback on PATH,
//                              no Python on PATH that imports it, no turnback.server.path; the
//                              extension installs the server it brought (its wheel) and the turn
//                              is captured, undone and redone from the command palette alone
// Environment (all optional):
//   TURNBACK_VSIX              the .vsix (default: client-vscode/turnback-0.1.0.vsix)
//   TURNBACK_BIN               the turnback executable, for the extension and the CLI
//                              (default: the repository's .venv/bin/turnback, else `turnback` on PATH)
//   TURNBACK_E2E_CACHE         setup.sh's cache folder (default: ~/.cache/turnback-e2e)
//   TURNBACK_E2E_CODE_SERVER   the code-server executable (default: the one setup.sh installed)
//   TURNBACK_E2E_CHROMIUM      the browser (default: /usr/bin/chromium)
//   TURNBACK_E2E_TIMEOUT       seconds the whole run may take (default: 300; 600 with --clean-machine)
//   TURNBACK_E2E_KEEP=1        keep the scratch folder (workspace, profile, storage)
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CLIENT = path.resolve(HERE, '..');
const REPO = path.resolve(CLIENT, '..');
const cliArgs = process.argv.slice(2);
const CLEAN = cliArgs.includes('--clean-machine');
// The clean-machine run keeps its screenshots and logs apart from the main run's.
const SHOTS = path.join(HERE, 'screenshots', ...(CLEAN ? ['clean-machine'] : []));
const LOGS = path.join(HERE, 'logs', ...(CLEAN ? ['clean-machine'] : []));
// The clean machine's first start installs the server (a virtual environment, pip): more time.
const TIMEOUT_S = Number(process.env.TURNBACK_E2E_TIMEOUT || (CLEAN ? 600 : 300));
const CS_VERSION = '4.100.3';

const started = Date.now();

// ---------------------------------------------------------------------------------------------
// Processes: everything started here is stopped on every way out (success, failure, timeout,
// signal). code-server runs in its own process group, which holds the extension host and the
// turnback server it starts.

let codeServer; // ChildProcess
let browser; // playwright Browser
let scratch; // the temp folder
let cleaning; // the cleanup's promise: every caller waits for the same one
let interrupted; // the signal that stops the run

function killGroup(child, signal) {
    if (child && child.exitCode === null && child.signalCode === null) {
        try {
            process.kill(-child.pid, signal);
        } catch {
            /* already gone */
        }
    }
}

/** Processes whose command line names the scratch folder: ours (code-server, exthost, server). */
function leftovers() {
    if (!scratch) {
        return [];
    }
    const found = [];
    for (const entry of fs.readdirSync('/proc')) {
        if (!/^\d+$/.test(entry) || Number(entry) === process.pid) {
            continue;
        }
        try {
            const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8');
            if (cmdline.includes(scratch)) {
                found.push(Number(entry));
            }
        } catch {
            /* exited */
        }
    }
    return found;
}

function cleanup() {
    cleaning ??= stopEverything();
    return cleaning;
}

async function stopEverything() {
    if (browser) {
        await Promise.race([browser.close().catch(() => undefined), sleep(10000)]);
    }
    if (codeServer) {
        killGroup(codeServer, 'SIGTERM');
        for (let i = 0; i < 50 && codeServer.exitCode === null && codeServer.signalCode === null; i++) {
            await sleep(100);
        }
        killGroup(codeServer, 'SIGKILL');
        await sleep(300);
    }
    // The turnback server and the extension host normally go with code-server's group.
    for (const pid of leftovers()) {
        console.error(`e2e: stopping leftover process ${pid}`);
        try {
            process.kill(pid, 'SIGKILL');
        } catch {
            /* gone */
        }
    }
    if (scratch && process.env.TURNBACK_E2E_KEEP !== '1') {
        fs.rmSync(scratch, { recursive: true, force: true });
    } else if (scratch) {
        console.log(`e2e: scratch folder kept: ${scratch}`);
    }
}

// Last resort, synchronous: playwright kills its browser on exit by itself.
process.on('exit', () => {
    killGroup(codeServer, 'SIGKILL');
    for (const pid of leftovers()) {
        try {
            process.kill(pid, 'SIGKILL');
        } catch {
            /* gone */
        }
    }
    if (scratch && process.env.TURNBACK_E2E_KEEP !== '1') {
        fs.rmSync(scratch, { recursive: true, force: true });
    }
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
        if (interrupted) {
            return;
        }
        interrupted = signal;
        if (inStep) {
            console.log('INTERRUPTED');
        }
        console.error(`e2e: ${signal}, stopping`);
        void cleanup().finally(() => process.exit(130));
    });
}
const watchdog = setTimeout(() => {
    if (inStep) {
        console.log('TIMED OUT');
    }
    console.error(`e2e: FAILED: the run took more than ${TIMEOUT_S} s`);
    void saveFailureState('timeout')
        .catch(() => undefined)
        .finally(() => cleanup().finally(() => process.exit(1)));
    setTimeout(() => process.exit(1), 20000).unref(); // if cleanup itself hangs
}, TIMEOUT_S * 1000);
watchdog.unref();

// ---------------------------------------------------------------------------------------------
// Helpers

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class E2EError extends Error {}
function fail(message) {
    throw new E2EError(message);
}
function check(condition, message) {
    if (!condition) {
        fail(message);
    }
}

/**
 * Polls `probe` until it returns a truthy value; fails with `message` (a string, or a function
 * called at the deadline, so that it describes the final state) and the probe's last value.
 */
/** Waits until app.py, greeting.py and helpers.py hold `want` (undefined: absent). */
async function untilFiles({ app, greeting, helpers }, want, what) {
    const files = [app, greeting, helpers];
    await until(
        () => files.every((file, i) => readText(file) === want[i]),
        () => `${what}: app.py=${JSON.stringify(readText(app))}, greeting.py=${JSON.stringify(readText(greeting))}, helpers.py=${JSON.stringify(readText(helpers))}`,
    );
}

async function until(probe, message, timeoutMs = 15000, intervalMs = 200) {
    const deadline = Date.now() + timeoutMs;
    let last;
    for (;;) {
        try {
            last = await probe();
            if (last) {
                return last;
            }
        } catch (error) {
            last = error;
        }
        if (Date.now() > deadline) {
            if (typeof message === 'function') {
                message = await message();
            }
            fail(`${message} (waited ${timeoutMs / 1000} s; last: ${describe(last)})`);
        }
        await sleep(intervalMs);
    }
}

function describe(value) {
    if (value instanceof Error) {
        return value.message.split('\n')[0];
    }
    return JSON.stringify(value);
}

let stepNo = 0;
let inStep = false;
async function step(name, fn) {
    stepNo += 1;
    const t0 = Date.now();
    process.stdout.write(`e2e: ${String(stepNo).padStart(2)}. ${name} ... `);
    inStep = true;
    try {
        const result = await fn();
        inStep = false;
        console.log(`ok (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
        return result;
    } catch (error) {
        if (inStep && !interrupted) {
            console.log('FAILED');
        }
        inStep = false;
        error.step = `${stepNo}. ${name}`;
        throw error;
    }
}

function isExecutable(file) {
    try {
        return fs.statSync(file).isFile() && (fs.accessSync(file, fs.constants.X_OK), true);
    } catch {
        return false;
    }
}

function which(name, searchPath = process.env.PATH || '') {
    return searchPath
        .split(path.delimiter)
        .filter(Boolean)
        .map((dir) => path.join(dir, name))
        .find(isExecutable);
}

function freePort() {
    return new Promise((resolve, reject) => {
        const server = net.createServer();
        server.unref();
        server.on('error', reject);
        server.listen(0, '127.0.0.1', () => {
            const { port } = server.address();
            server.close(() => resolve(port));
        });
    });
}

const readText = (file) => {
    try {
        return fs.readFileSync(file, 'utf8');
    } catch {
        return undefined; // absent
    }
};

// ---------------------------------------------------------------------------------------------
// Configuration

const vsixArg = cliArgs.find((a) => !a.startsWith('--'));
const vsix = path.resolve(vsixArg || process.env.TURNBACK_VSIX || path.join(CLIENT, 'turnback-0.1.0.vsix'));
const cache = process.env.TURNBACK_E2E_CACHE || path.join(os.homedir(), '.cache', 'turnback-e2e');
const codeServerBin =
    process.env.TURNBACK_E2E_CODE_SERVER || path.join(cache, `code-server-${CS_VERSION}`, 'node_modules', '.bin', 'code-server');
const chromiumBin = process.env.TURNBACK_E2E_CHROMIUM || '/usr/bin/chromium';
const turnbackBin =
    process.env.TURNBACK_BIN || [path.join(REPO, '.venv', 'bin', 'turnback')].find((p) => fs.existsSync(p)) || which('turnback');

// The agent's turn, file by file.
const APP_BEFORE = "def greet(name):\n    return 'hello ' + name\n\n\nif __name__ == '__main__':\n    print(greet('world'))\n";
const APP_AGENT =
    "from greeting import welcome\n\n\ndef greet(name):\n    return welcome(name, punctuation='!')\n\n\nif __name__ == '__main__':\n    print(greet('world'))\n";
const GREETING_AGENT = "def welcome(name, punctuation='.'):\n    return f'Hello, {name}{punctuation}'\n";
const HELPERS_BEFORE = "def shout(text):\n    return text.upper()\n";
/** A nested repository inside the workspace (issue 14): its files are part of every turn. */
const NESTED = path.join('vendor', 'lib');
const LIB_BEFORE = "def version():\n    return '1.0'\n";
const LIB_AGENT = "def version():\n    return '2.0'\n";
const APP_RUNNING = "def greet(name):\n    return 'HELLO ' + name.upper()\n";
const MANUAL_EDIT = "# my own edit, made after the agent's turn\ndef greet(name):\n    return 'hi ' + name\n";
const LATER_EDIT = "# a later edit of mine\n";

// ---------------------------------------------------------------------------------------------
// The browser side

/** The lines a Monaco editor renders, in order (spaces are rendered as non-breaking spaces). */
async function editorText(page, locator) {
    return locator.evaluate((viewLines) => {
        const lines = [...viewLines.querySelectorAll('.view-line')].map((el) => ({
            top: parseFloat(el.style.top || '0'),
            text: el.textContent.replace(/\u00a0/g, ' '),
        }));
        lines.sort((a, b) => a.top - b.top);
        return lines.map((l) => l.text).join('\n');
    });
}

function tab(page, name) {
    return page.locator('.tabs-container .tab').filter({ has: page.locator('.label-name', { hasText: new RegExp(`^${escapeRe(name)}$`) }) });
}

const escapeRe = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The text editor (not a diff side) shown in the active editor group. */
function activeTextEditorLines(page) {
    return page.locator('.editor-group-container.active .editor-instance > .monaco-editor .view-lines').first();
}

/** Makes src/app.py's editor active and waits until it shows `expected`. */
async function expectEditorShows(page, expected, what) {
    await tab(page, 'app.py').first().click();
    const want = expected.replace(/\n$/, '');
    await until(
        async () => (await editorText(page, activeTextEditorLines(page))).trimEnd() === want.trimEnd(),
        async () =>
            `the editor of src/app.py does not show ${what}; it shows ${JSON.stringify(await editorText(page, activeTextEditorLines(page)).catch(() => '?'))}`,
        10000,
    );
}

/** Runs a command from the palette (F1), choosing the row whose label is exactly `title`. */
async function runCommand(page, title) {
    // The palette sometimes closes between filling it and the click (focus moving back from a
    // dialog or a notification that just closed): the row is then in the DOM but hidden. Right
    // after a dialog closes, F1 may also reach no part of the workbench and open nothing. Either
    // way, put the focus back in the editor and open the palette again rather than wait 20 s
    // on an input or a row that will never show.
    for (let attempt = 1; ; attempt++) {
        try {
            await page.keyboard.press('Escape');
            await page.keyboard.press('F1');
            const input = page.locator('.quick-input-widget .quick-input-box input');
            await input.waitFor({ state: 'visible', timeout: 5000 });
            await input.fill(`>${title}`, { timeout: 5000 });
            const row = page
                .locator('.quick-input-widget .quick-input-list .monaco-list-row')
                .filter({ has: page.locator('.label-name', { hasText: new RegExp(`^${escapeRe(title)}$`) }) });
            await until(async () => (await row.count()) > 0, `the command palette has no command "${title}"`, 10000);
            await row.first().click({ timeout: 5000 });
            break;
        } catch (error) {
            if (attempt === 3) throw error;
            await page
                .locator('.editor-group-container')
                .first()
                .click({ position: { x: 600, y: 500 }, timeout: 5000 })
                .catch(() => undefined);
        }
    }
    await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 5000 }).catch(() => undefined);
    await page.mouse.move(1100, 650); // off the tabs: no hover tooltips in the screenshots
}

/** The texts of the notification toasts on screen. */
async function toasts(page) {
    return page.locator('.notifications-toasts .notification-toast').allInnerTexts();
}

async function waitForToast(page, pattern, what) {
    const text = await until(async () => (await toasts(page)).find((t) => pattern.test(t)), `no notification ${what}`, 15000);
    await sleep(500); // the toast slides in
    return text;
}

async function clearToasts(page) {
    // "Clear All Notifications" has no default key in the browser; close them one by one.
    for (let i = 0; i < 10; i++) {
        const close = page.locator('.notifications-toasts .notification-toast .codicon-notifications-clear').first();
        if (!(await close.count())) {
            break;
        }
        await close.click({ timeout: 2000 }).catch(() => undefined);
    }
}

/** Fails on an error notification from turnback ("turnback: ..."). */
async function checkNoErrorToasts(page) {
    const errors = await page
        .locator('.notifications-toasts .notification-toast')
        .filter({ has: page.locator('.codicon-error') })
        .allInnerTexts();
    const ours = errors.filter((t) => /turnback/i.test(t));
    check(!ours.length, `turnback showed an error: ${ours.join(' | ')}`);
}

async function shot(page, name) {
    const file = path.join(SHOTS, name);
    await page.screenshot({ path: file });
    return file;
}

function statusItem(page) {
    return page.locator('.statusbar-item').filter({ hasText: '↶' }).first();
}

async function waitForStatus(page, pattern, what, timeoutMs = 20000) {
    return until(
        async () => {
            const text = await statusItem(page).innerText({ timeout: 1000 });
            return pattern.test(text) && text;
        },
        `the status bar item does not show ${what}`,
        timeoutMs,
    );
}

let page; // for the failure screenshot
let codeServerLog = '';
let paths; // scratch paths

async function saveFailureState(reason) {
    if (page) {
        await Promise.race([page.screenshot({ path: path.join(SHOTS, 'failure.png') }).catch(() => undefined), sleep(5000)]);
        console.error(`e2e: screenshot of the failure: ${path.join(SHOTS, 'failure.png')}`);
        const visible = await Promise.race([toasts(page).catch(() => []), sleep(3000).then(() => [])]);
        if (visible.length) {
            console.error(`e2e: notifications on screen: ${visible.map((t) => t.replace(/\s+/g, ' ')).join(' | ')}`);
        }
    }
    saveLogs();
    console.error(`e2e: logs (code-server, turnback server, VS Code) in ${LOGS} (${reason})`);
}

function saveLogs() {
    fs.mkdirSync(LOGS, { recursive: true });
    fs.writeFileSync(path.join(LOGS, 'code-server.log'), codeServerLog);
    if (paths && fs.existsSync(paths.userData)) {
        const vscodeLogs = path.join(paths.userData, 'logs');
        if (fs.existsSync(vscodeLogs)) {
            fs.rmSync(path.join(LOGS, 'vscode'), { recursive: true, force: true });
            fs.cpSync(vscodeLogs, path.join(LOGS, 'vscode'), { recursive: true });
        }
    }
    if (paths && fs.existsSync(paths.serverLog)) {
        fs.copyFileSync(paths.serverLog, path.join(LOGS, 'turnback-server.log'));
    }
}

// ---------------------------------------------------------------------------------------------
// The scenario

async function main() {
    // Preconditions, with the fix for each.
    check(fs.existsSync(vsix), `no .vsix at ${vsix}: build it with \`cd client-vscode && npm ci && npm run package\` (or \`make vsix\`)`);
    check(
        fs.existsSync(codeServerBin),
        `no code-server at ${codeServerBin}: run client-vscode/e2e/setup.sh (or \`make e2e\`) first`,
    );
    check(fs.existsSync(chromiumBin), `no chromium at ${chromiumBin}: run client-vscode/e2e/setup.sh first`);
    check(
        CLEAN || (turnbackBin && fs.existsSync(turnbackBin)),
        'no turnback executable: run `make install` (the repository\'s .venv), or set TURNBACK_BIN',
    );
    let chromium;
    try {
        ({ chromium } = await import('playwright-core'));
    } catch {
        fail(`playwright-core is not installed in ${HERE}: run client-vscode/e2e/setup.sh first`);
    }

    fs.rmSync(SHOTS, { recursive: true, force: true });
    fs.mkdirSync(SHOTS, { recursive: true });
    fs.rmSync(LOGS, { recursive: true, force: true });

    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'turnback-e2e-'));
    paths = {
        ws: path.join(scratch, 'project'),
        home: path.join(scratch, 'home'),
        data: path.join(scratch, 'turnback-data'),
        userData: path.join(scratch, 'vscode-user'),
        extensions: path.join(scratch, 'vscode-extensions'),
        serverLog: path.join(scratch, 'turnback-server.log'),
    };
    const ws = paths.ws;
    const app = path.join(ws, 'src', 'app.py');
    const greeting = path.join(ws, 'src', 'greeting.py');
    const helpers = path.join(ws, 'src', 'helpers.py');

    // code-server, its extension host, the turnback server it starts and the CLI all see the
    // same HOME and TURNBACK_DATA_DIR, so the CLI's captures are the server's turns.
    const env = {
        ...process.env,
        HOME: paths.home,
        XDG_CONFIG_HOME: path.join(paths.home, '.config'),
        XDG_DATA_HOME: path.join(paths.home, '.local', 'share'),
        XDG_CACHE_HOME: path.join(paths.home, '.cache'),
        TURNBACK_DATA_DIR: paths.data,
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_AUTHOR_NAME: 'e2e',
        GIT_AUTHOR_EMAIL: 'e2e@example.invalid',
        GIT_COMMITTER_NAME: 'e2e',
        GIT_COMMITTER_EMAIL: 'e2e@example.invalid',
    };
    delete env.VSCODE_IPC_HOOK_CLI; // a code-server started from a VS Code terminal would talk to that one
    if (CLEAN) {
        // No turnback anywhere the extension could find one: PATH without any folder holding a
        // turnback executable (the repository's .venv/bin included), no virtualenv, no PYTHONPATH.
        env.PATH = (process.env.PATH || '')
            .split(path.delimiter)
            .filter((dir) => dir && path.resolve(dir) !== path.join(REPO, '.venv', 'bin') && !isExecutable(path.join(dir, 'turnback')))
            .join(path.delimiter);
        for (const name of ['VIRTUAL_ENV', 'PYTHONPATH', 'PYTHONHOME', 'CONDA_PREFIX', 'PIP_USER', 'TURNBACK_BIN']) {
            delete env[name];
        }
    }
    const turnback = (...args) => execFileSync(turnbackBin, args, { cwd: ws, env, encoding: 'utf8', timeout: 30000 });
    const timeline = () => JSON.parse(turnback('list', '--json', '-C', ws));

    await step('workspace: a git repository with src/app.py and src/helpers.py', () => {
        for (const dir of [path.join(ws, 'src'), paths.home, paths.data, path.join(paths.userData, 'User'), paths.extensions]) {
            fs.mkdirSync(dir, { recursive: true });
        }
        fs.writeFileSync(app, APP_BEFORE);
        fs.writeFileSync(helpers, HELPERS_BEFORE);
        fs.writeFileSync(path.join(ws, 'README.md'), '# demo project\n');
        const git = (...args) => execFileSync('git', args, { cwd: ws, env, stdio: 'pipe' });
        git('init', '-q', '-b', 'main');
        git('add', '-A');
        git('commit', '-q', '-m', 'initial');
        // vendor/lib: its own repository inside the workspace, untracked by the outer one.
        const nested = path.join(ws, NESTED);
        fs.mkdirSync(nested, { recursive: true });
        fs.writeFileSync(path.join(nested, 'lib.py'), LIB_BEFORE);
        const nestedGit = (...args) => execFileSync('git', args, { cwd: nested, env, stdio: 'pipe' });
        nestedGit('init', '-q', '-b', 'main');
        nestedGit('add', '-A');
        nestedGit('commit', '-q', '-m', 'vendored');
        fs.writeFileSync(
            path.join(paths.userData, 'User', 'settings.json'),
            JSON.stringify(
                {
                    ...(CLEAN ? {} : { 'turnback.server.path': turnbackBin }),
                    'turnback.server.args': ['--log-file', paths.serverLog],
                    'workbench.startupEditor': 'none',
                    'workbench.colorTheme': 'Default Dark Modern',
                    'workbench.tips.enabled': false,
                    'workbench.enableExperiments': false,
                    'workbench.editor.enablePreviewFromQuickOpen': false,
                    'security.workspace.trust.enabled': false,
                    'extensions.autoCheckUpdates': false,
                    'extensions.autoUpdate': false,
                    'extensions.ignoreRecommendations': true,
                    'update.mode': 'none',
                    'telemetry.telemetryLevel': 'off',
                    'git.enabled': false,
                    'chat.commandCenter.enabled': false,
                    'window.commandCenter': true,
                    'editor.minimap.enabled': false,
                },
                null,
                2,
            ),
        );
    });

    if (CLEAN) {
        await step('clean machine: no turnback on PATH, no Python on PATH that imports turnback', () => {
            check(!which('turnback', env.PATH), `turnback is on the test's PATH: ${which('turnback', env.PATH)}`);
            const pythons = ['python3', 'python'].map((name) => which(name, env.PATH)).filter(Boolean);
            check(pythons.length > 0, 'no python3 or python on PATH: the clean-machine test needs a Python >= 3.10');
            for (const python of pythons) {
                let imported = true;
                try {
                    execFileSync(python, ['-c', 'import turnback'], { env, stdio: 'pipe', timeout: 30000 });
                } catch {
                    imported = false;
                }
                check(!imported, `${python} imports turnback: the clean-machine test needs a Python without it`);
            }
        });
    }

    await step(`install ${path.basename(vsix)} into a fresh extensions folder`, () => {
        const out = execFileSync(
            codeServerBin,
            ['--user-data-dir', paths.userData, '--extensions-dir', paths.extensions, '--install-extension', vsix],
            { env, encoding: 'utf8', stdio: 'pipe', timeout: 60000 },
        );
        check(/successfully installed/i.test(out), `code-server --install-extension did not report success:\n${out}`);
        const installed = fs.readdirSync(paths.extensions).filter((d) => d.startsWith('turnback.turnback-'));
        check(installed.length === 1, `the extension is not in ${paths.extensions}: ${fs.readdirSync(paths.extensions).join(', ')}`);
    });

    const port = await freePort();
    await step(`start code-server ${CS_VERSION} on 127.0.0.1:${port}`, async () => {
        codeServer = spawn(
            codeServerBin,
            [
                '--auth', 'none',
                '--bind-addr', `127.0.0.1:${port}`,
                '--disable-telemetry',
                '--disable-update-check',
                '--disable-workspace-trust',
                '--disable-getting-started-override',
                '--user-data-dir', paths.userData,
                '--extensions-dir', paths.extensions,
                ws,
            ],
            { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
        );
        codeServer.stdout.on('data', (d) => (codeServerLog += d));
        codeServer.stderr.on('data', (d) => (codeServerLog += d));
        await until(
            () => {
                check(codeServer.exitCode === null, `code-server exited (${codeServer.exitCode}):\n${codeServerLog}`);
                return codeServerLog.includes('HTTP server listening');
            },
            'code-server did not start listening',
            60000,
        );
    });

    await step('open the workbench in chromium', async () => {
        browser = await chromium.launch({
            executablePath: chromiumBin,
            args: [
                '--no-sandbox',
                '--disable-gpu',
                '--disable-background-networking',
                '--disable-component-update',
                '--disable-sync',
                '--no-first-run',
                '--disable-quic',
            ],
            timeout: 60000,
            // This script's own handlers stop the browser, code-server and the scratch folder.
            handleSIGINT: false,
            handleSIGTERM: false,
            handleSIGHUP: false,
        });
        const context = await browser.newContext({ viewport: { width: 1400, height: 860 }, deviceScaleFactor: 1 });
        page = await context.newPage();
        page.setDefaultTimeout(20000);
        await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`, { timeout: 60000 });
        await page.locator('.monaco-workbench').waitFor({ timeout: 60000 });
    });

    if (CLEAN) {
        await step('the extension installs the server it brought (progress shown), then starts it: "↶ no turns"', async () => {
            // The progress notification, while the private environment is made and pip installs.
            let progress;
            let error;
            await until(
                async () => {
                    progress ??= (await toasts(page)).find((t) => /installing its server/.test(t));
                    if (progress && !fs.existsSync(path.join(SHOTS, '00-installing-server.png'))) {
                        await sleep(600); // the toast slides in
                        await shot(page, '00-installing-server.png');
                    }
                    error = await checkNoErrorToasts(page).then(() => undefined, (e) => e);
                    return error || /no turns/.test(await statusItem(page).innerText({ timeout: 1000 }).catch(() => ''));
                },
                'the server the extension brought did not start (status bar "↶ no turns")',
                300000,
                500,
            );
            if (error) {
                throw error;
            }
            check(progress, 'no progress notification "turnback: installing its server" while it installed');
            // It runs from the private environment in the extension's global storage.
            const storage = path.join(paths.userData, 'User', 'globalStorage', 'turnback.turnback');
            const envs = fs.existsSync(storage) ? fs.readdirSync(storage).filter((d) => /^server-env-[^.]+\.[^.]+\.[^.]+$/.test(d)) : [];
            check(envs.length === 1, `no private environment in ${storage}: ${envs.join(', ')}`);
            const marker = JSON.parse(readText(path.join(storage, envs[0], 'turnback-env.json')) || '{}');
            check(/^turnback-.*\.whl$/.test(marker.wheel || ''), `the private environment has no marker naming the bundled wheel: ${JSON.stringify(marker)}`);
            const serverProcess = leftovers()
                .map((pid) => readText(`/proc/${pid}/cmdline`)?.split('\0') || [])
                .find((argv) => argv.includes('serve') && argv.includes('turnback'));
            check(
                serverProcess && serverProcess[0] === path.join(storage, envs[0], 'bin', 'python'),
                `the running server is not the private environment's python -m turnback serve: ${JSON.stringify(serverProcess)}`,
            );
        });
    } else {
        await step('the extension starts its server: status bar "↶ no turns"', async () => {
            await waitForStatus(page, /no turns/, '"↶ no turns" (the server running, no turns yet)').catch(async (error) => {
                const text = await statusItem(page).innerText({ timeout: 1000 }).catch(() => '(no turnback item)');
                fail(`${error.message}; it shows: ${text}`);
            });
        });
    }

    await step('open src/app.py in an editor', async () => {
        await page.keyboard.press('Control+P');
        const input = page.locator('.quick-input-widget .quick-input-box input');
        await input.waitFor({ state: 'visible' });
        await input.fill('src/app.py');
        const row = page.locator('.quick-input-widget .quick-input-list .monaco-list-row').filter({ hasText: 'app.py' });
        await row.first().waitFor();
        await page.keyboard.press('Enter');
        await tab(page, 'app.py').first().waitFor();
        await expectEditorShows(page, APP_BEFORE, 'the original text');
    });

    if (CLEAN) {
        await cleanMachineTurn(page, { app, greeting, helpers });
        saveLogs();
        return;
    }

    await step('agent turn from the CLI: capture, change 3 files, capture --phase after', async () => {
        turnback('capture', '--label', 'agent turn', '-C', ws);
        // snapshot/didChange: the CLI's capture shows up in VS Code.
        await waitForStatus(page, /turn 1/, '"↶ turn 1" after the CLI capture (snapshot/didChange)');
        fs.writeFileSync(app, APP_AGENT); // modified, open in the editor
        fs.writeFileSync(greeting, GREETING_AGENT); // created
        fs.rmSync(helpers); // deleted
        turnback('capture', '--phase', 'after', '-C', ws);
        const turns = timeline().turns;
        check(turns.length === 1 && turns[0].sealed && turns[0].state === 'active', `the CLI's timeline is not one sealed active turn: ${JSON.stringify(turns)}`);
        await expectEditorShows(page, APP_AGENT, "the agent's text (VS Code reloads it from disk)");
    });

    await step('turnback: Show Turns lists the turn', async () => {
        await runCommand(page, 'turnback: Show Turns');
        const rows = page.locator('.quick-input-widget .quick-input-list .monaco-list-row');
        const text = await until(
            async () => (await rows.allInnerTexts()).find((t) => t.includes('agent turn')),
            'the Show Turns quick pick has no row "agent turn"',
        );
        const flat = text.replace(/\s+/g, ' ');
        for (const part of ['turn 1', '3 files changed', 'active', 'finished']) {
            check(flat.includes(part), `the quick pick's turn row does not say "${part}": ${flat}`);
        }
        const title = await page.locator('.quick-input-widget .quick-input-title').innerText();
        check(/turns of session/.test(title), `unexpected quick pick title: ${title}`);
        await shot(page, '01-show-turns.png');
        // Choosing the turn offers its diff and "Undo To Here".
        await rows.filter({ hasText: 'agent turn' }).first().click();
        await until(async () => {
            const actions = (await rows.allInnerTexts()).join(' | ');
            return actions.includes('Show Diff') && actions.includes('Undo To Here');
        }, 'choosing the turn does not offer "Show Diff" and "Undo To Here"');
        await shot(page, '02-turn-actions.png');
        await page.keyboard.press('Escape');
        await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
    });

    await step('turnback: Show Turn Diff opens the turn in the diff editor', async () => {
        await runCommand(page, 'turnback: Show Turn Diff');
        const diffTab = tab(page, 'Agent turn 1: agent turn (3 files)');
        await until(async () => (await diffTab.count()) > 0, 'no editor tab "Agent turn 1: agent turn (3 files)"');
        // The multi-file diff editor: one entry per file, with both sides' text.
        const editor = page.locator('.editor-group-container.active .editor-instance').first();
        await until(async () => {
            const text = (await editor.innerText()).replace(/\u00a0/g, ' ');
            return ['app.py', 'greeting.py', 'helpers.py'].every((f) => text.includes(f)) && text.includes('welcome') && text.includes("return 'hello ' + name") && text.includes('def shout');
        }, 'the diff editor does not show the 3 files with their before and after text');
        await sleep(500); // let the diff decorations settle for the screenshot
        await shot(page, '03-turn-diff.png');
        await checkNoErrorToasts(page);
    });

    await step('turnback: Undo Agent Turn: the files and the open editor go back', async () => {
        await clearToasts(page);
        await runCommand(page, 'turnback: Undo Agent Turn');
        await untilFiles({ app, greeting, helpers }, [APP_BEFORE, undefined, HELPERS_BEFORE], 'the files on disk are not back to before the turn');
        const note = await waitForToast(page, /Undid 1 turn/, '"Undid 1 turn ..."');
        check(/Redo/.test(note), `the undo notification offers no Redo: ${note}`);
        await waitForStatus(page, /all undone.*↷1/, '"↶ all undone ↷1"');
        await shot(page, '04-undo-notification.png');
        await expectEditorShows(page, APP_BEFORE, 'the original text after undo');
        check(timeline().turns[0].state === 'undone', 'the CLI does not see the turn as undone');
        await shot(page, '05-undo-editor.png');
        await checkNoErrorToasts(page);
    });

    await step("turnback: Redo Agent Turn: the agent's version is back", async () => {
        await clearToasts(page);
        await runCommand(page, 'turnback: Redo Agent Turn');
        await untilFiles({ app, greeting, helpers }, [APP_AGENT, GREETING_AGENT, undefined], "the files on disk are not the agent's again");
        await waitForToast(page, /Redid 1 turn/, '"Redid 1 turn ..."');
        await waitForStatus(page, /turn 1$/, '"↶ turn 1"');
        await expectEditorShows(page, APP_AGENT, "the agent's text after redo");
        await shot(page, '06-redo.png');
        await checkNoErrorToasts(page);
    });

    await step('a manual edit, then Undo: the conflict modal names src/app.py; Cancel changes nothing', async () => {
        await clearToasts(page);
        fs.writeFileSync(app, MANUAL_EDIT);
        await expectEditorShows(page, MANUAL_EDIT, 'the manual edit (reloaded from disk)');
        await runCommand(page, 'turnback: Undo Agent Turn');
        const dialog = page.locator('.monaco-dialog-box');
        await dialog.waitFor({ state: 'visible', timeout: 15000 });
        const text = (await dialog.innerText()).replace(/\s+/g, ' ');
        check(/Undo would overwrite your changes to 1 file/.test(text), `unexpected conflict modal: ${text}`);
        check(text.includes('src/app.py'), `the conflict modal does not name src/app.py: ${text}`);
        await shot(page, '07-conflict-modal.png');
        await dialog.locator('.monaco-button', { hasText: /^Cancel$/ }).click();
        await dialog.waitFor({ state: 'hidden' });
        await sleep(1500); // nothing may happen now
        check(readText(app) === MANUAL_EDIT, `Cancel changed src/app.py: ${JSON.stringify(readText(app))}`);
        check(readText(greeting) === GREETING_AGENT && readText(helpers) === undefined, 'Cancel changed the other files of the turn');
        check(timeline().turns[0].state === 'active', 'after Cancel the turn is no longer active');
        await expectEditorShows(page, MANUAL_EDIT, 'the manual edit after Cancel');
        await checkNoErrorToasts(page);
    });

    await step('Undo again, "Overwrite my changes": the undo happens', async () => {
        await runCommand(page, 'turnback: Undo Agent Turn');
        const dialog = page.locator('.monaco-dialog-box');
        await dialog.waitFor({ state: 'visible', timeout: 15000 });
        check((await dialog.innerText()).includes('src/app.py'), 'the second conflict modal does not name src/app.py');
        await dialog.locator('.monaco-button', { hasText: 'Overwrite my changes' }).click();
        await dialog.waitFor({ state: 'hidden' });
        await untilFiles({ app, greeting, helpers }, [APP_BEFORE, undefined, HELPERS_BEFORE], 'the forced undo did not restore the files');
        await waitForToast(page, /Undid 1 turn/, '"Undid 1 turn ..." after the forced undo');
        await expectEditorShows(page, APP_BEFORE, 'the original text after the forced undo');
        check(timeline().turns[0].state === 'undone', 'after the forced undo the CLI does not see the turn as undone');
        await shot(page, '08-forced-undo.png');
        await checkNoErrorToasts(page);
    });

    await step('Redo brings back what the forced undo overwrote (the manual edit)', async () => {
        await clearToasts(page);
        await runCommand(page, 'turnback: Redo Agent Turn');
        await untilFiles({ app, greeting, helpers }, [MANUAL_EDIT, GREETING_AGENT, undefined], 'redo did not bring back the state the forced undo replaced');
        await waitForToast(page, /Redid 1 turn/, '"Redid 1 turn ..." after the forced undo');
        await expectEditorShows(page, MANUAL_EDIT, 'the manual edit after redo');
        await shot(page, '09-redo-after-overwrite.png');
        await checkNoErrorToasts(page);
    });

    await step('a later edit, then Put Back a Rescued Version…: the edit the forced undo overwrote is back', async () => {
        await clearToasts(page);
        fs.writeFileSync(app, LATER_EDIT);
        await expectEditorShows(page, LATER_EDIT, 'the later edit (reloaded from disk)');
        await runCommand(page, 'turnback: Put Back a Rescued Version…');
        const rows = page.locator('.quick-input-widget .quick-input-list .monaco-list-row');
        const text = await until(
            async () => (await rows.allInnerTexts()).find((t) => t.includes('src/app.py')),
            'the rescued versions quick pick has no row for src/app.py',
        );
        check(text.replace(/\s+/g, ' ').includes('overwritten by a forced undo'), `unexpected rescued version row: ${text}`);
        await shot(page, '09b-rescued-versions.png');
        await rows.filter({ hasText: 'src/app.py' }).first().click();
        await untilFiles({ app, greeting, helpers }, [MANUAL_EDIT, GREETING_AGENT, undefined], 'the put-back did not bring back the manual edit');
        await waitForToast(page, /Put back 1 file of rescued version/, '"Put back 1 file ..." after the put-back');
        await expectEditorShows(page, MANUAL_EDIT, 'the manual edit after the put-back');
        await checkNoErrorToasts(page);
        await clearAllNotifications(page);
    });

    // Issue 15: an undo never lands in the middle of a running agent turn.
    const hook = (event) =>
        execFileSync(turnbackBin, ['hook', 'claude-code', event], {
            cwd: ws,
            env,
            input: JSON.stringify({ session_id: 'e2e1', cwd: ws, hook_event_name: event, prompt: 'Shout the greeting' }),
            encoding: 'utf8',
            timeout: 30000,
        });

    await step('a Claude Code hook opens a turn and the agent writes: the status bar shows it running', async () => {
        await clearToasts(page);
        hook('UserPromptSubmit');
        fs.writeFileSync(app, APP_RUNNING);
        await waitForStatus(page, /turn 1[\s\S]*running/, '"↶ turn 1 … running" while the agent works');
        await expectEditorShows(page, APP_RUNNING, "the running agent's text");
        await shot(page, '10-running-status.png');
    });

    await step('the "Undo turn" lens on the running turn: the modal says it is still running; Cancel changes nothing', async () => {
        // The running turn changed two hunks of src/app.py: wait for both of its lenses (the
        // lenses of the previous session's turn may still show until VS Code asks again).
        const lens = page.locator('.codelens-decoration a', { hasText: /^Undo turn$/ });
        await until(async () => (await lens.count()) === 2, 'no "Undo turn" code lenses on the running turn\'s two hunks', 20000);
        await sleep(500);
        await lens.last().click();
        const dialog = page.locator('.monaco-dialog-box');
        await dialog.waitFor({ state: 'visible', timeout: 15000 });
        const text = (await dialog.innerText()).replace(/\s+/g, ' ');
        check(/Turn 1 is still running \(claude-code session e2e1\)/.test(text), `unexpected running-turn modal: ${text}`);
        check(text.includes('Undo anyway'), `the running-turn modal offers no "Undo anyway": ${text}`);
        await shot(page, '11-running-modal.png');
        await dialog.locator('.monaco-button', { hasText: /^Cancel$/ }).click();
        await dialog.waitFor({ state: 'hidden' });
        await sleep(1500); // nothing may happen now
        check(readText(app) === APP_RUNNING, `Cancel changed src/app.py: ${JSON.stringify(readText(app))}`);
        await checkNoErrorToasts(page);
    });

    await step('the Stop hook ends the turn: the status bar follows, and Undo Agent Turn undoes it', async () => {
        hook('Stop');
        await waitForStatus(page, /turn 1$/, '"↶ turn 1" once the turn ended');
        await runCommand(page, 'turnback: Undo Agent Turn');
        await until(
            () => readText(app) === MANUAL_EDIT,
            () => `the undo after Stop did not restore src/app.py: ${JSON.stringify(readText(app))}`,
        );
        await waitForToast(page, /Undid 1 turn/, '"Undid 1 turn ..." after the turn ended');
        await shot(page, '12-undo-after-stop.png');
        await checkNoErrorToasts(page);
    });

    await nestedRepositoryTurn(page, { ws, env, turnback });
    await serverSettingChanged(page);

    saveLogs();
}

/**
 * `turnback.server.path` changed while VS Code runs: to an older turnback without `serve`
 * (one error naming its exit code and the last line it printed, no restart loop), then back
 * (the server runs again, with no reload). In a remote window (code-server) such a change
 * was read as empty while the settings were `machine-overridable`.
 */
async function serverSettingChanged(page) {
    const settingsFile = path.join(paths.userData, 'User', 'settings.json');
    // As a user does it: in the settings.json editor, saved.
    let settings = JSON.parse(readText(settingsFile));
    const setServerPath = async (value) => {
        settings = { ...settings, 'turnback.server.path': value };
        await runCommand(page, 'Preferences: Open User Settings (JSON)');
        await tab(page, 'settings.json').first().waitFor();
        await sleep(500);
        await page.keyboard.press('Control+A');
        await page.keyboard.press('Delete');
        await page.keyboard.insertText(JSON.stringify(settings));
        await page.keyboard.press('Control+S');
        // (The editor may close a brace it was typed: read the value, not the whole file.)
        await until(() => readText(settingsFile).includes(`"turnback.server.path":${JSON.stringify(value)}`), 'the settings.json editor did not save');
        await page.keyboard.press('Control+W');
    };
    const old = path.join(scratch, 'old-turnback', 'turnback');
    fs.mkdirSync(path.dirname(old), { recursive: true });
    fs.writeFileSync(old, "#!/bin/sh\necho 'usage: turnback [-h] {capture,undo}' >&2\necho \"turnback: error: invalid choice: 'serve'\" >&2\nexit 2\n", { mode: 0o755 });
    await step('turnback.server.path set to an older turnback: one error with its exit code and last line', async () => {
        await clearAllNotifications(page);
        await setServerPath(old);
        const error = await waitForToast(page, /did not start/, '"the server did not start ..." naming the older turnback');
        for (const part of [old, 'exit code 2', "invalid choice: 'serve'"]) {
            check(error.includes(part), `the start failure does not say "${part}": ${error}`);
        }
        await sleep(3000); // a restart loop would show more
        const all = (await toasts(page)).join(' | ');
        check(!/crashed|is erroring/.test(all), `the client's own restart loop ran: ${all}`);
        await shot(page, '15-older-turnback-on-the-setting.png');
    });
    await step('turnback.server.path set back: the server runs again, no reload', async () => {
        await clearAllNotifications(page);
        await setServerPath(turnbackBin);
        await waitForStatus(page, /turn \d|all undone|no turns/, 'the turns again once the setting names the real turnback');
        await checkNoErrorToasts(page);
    });
}

/**
 * Issue 14: a turn that changes a file inside a nested repository (vendor/lib, its own git
 * repository inside the workspace) shows its code lenses on that file, and the lens's "Undo
 * turn" puts the file back without moving the nested repository's HEAD.
 */
async function nestedRepositoryTurn(page, { ws, env, turnback }) {
    const lib = path.join(ws, NESTED, 'lib.py');
    const nestedHead = () => execFileSync('git', ['rev-parse', 'HEAD'], { cwd: path.join(ws, NESTED), env, encoding: 'utf8' }).trim();
    const head = nestedHead();
    await step('a turn changes vendor/lib/lib.py, inside a nested repository', async () => {
        await clearAllNotifications(page);
        turnback('capture', '--label', 'vendored change', '-C', ws);
        fs.writeFileSync(lib, LIB_AGENT);
        turnback('capture', '--phase', 'after', '-C', ws);
        await page.keyboard.press('Control+P');
        const input = page.locator('.quick-input-widget .quick-input-box input');
        await input.waitFor({ state: 'visible' });
        await input.fill('vendor/lib/lib.py');
        const row = page.locator('.quick-input-widget .quick-input-list .monaco-list-row').filter({ hasText: 'lib.py' });
        await row.first().waitFor();
        await page.keyboard.press('Enter');
        await tab(page, 'lib.py').first().waitFor();
        await until(
            async () => (await editorText(page, activeTextEditorLines(page))).trimEnd() === LIB_AGENT.trimEnd(),
            "vendor/lib/lib.py's editor does not show the agent's text",
            10000,
        );
    });

    await step('its "Undo turn" lens undoes the turn; the nested repository\'s HEAD stays', async () => {
        const lens = page.locator('.codelens-decoration a', { hasText: /^Undo turn$/ });
        await until(async () => (await lens.count()) >= 1, 'no "Undo turn" code lens on vendor/lib/lib.py', 20000);
        await sleep(500);
        await shot(page, '13-nested-lens.png');
        await lens.first().click();
        await until(
            () => readText(lib) === LIB_BEFORE,
            () => `the lens's undo did not restore vendor/lib/lib.py: ${JSON.stringify(readText(lib))}`,
        );
        await waitForToast(page, /Undid 1 turn/, '"Undid 1 turn ..." from the nested file\'s lens');
        check(nestedHead() === head, "the undo moved the nested repository's HEAD");
        await checkNoErrorToasts(page);
    });
}

/** Notifications: Clear All Notifications, from the palette (closing toasts one by one can stall on a fading one). */
async function clearAllNotifications(page) {
    await runCommand(page, 'Notifications: Clear All Notifications');
    await until(async () => (await toasts(page)).length === 0, 'the notifications did not clear', 5000);
}

/**
 * The clean machine's scenario, from the command palette alone (no CLI: nothing on this machine
 * has turnback but the extension's own environment): capture, the agent's changes, mark the turn
 * finished, undo, redo.
 */
async function cleanMachineTurn(page, { app, greeting, helpers }) {
    await step('turnback: Capture Snapshot (label "agent turn") from the palette', async () => {
        await clearAllNotifications(page);
        await runCommand(page, 'turnback: Capture Snapshot');
        const input = page.locator('.quick-input-widget .quick-input-box input');
        await input.waitFor({ state: 'visible' });
        await input.fill('agent turn');
        await page.keyboard.press('Enter');
        await waitForToast(page, /captured turn 1/, '"turnback: captured turn 1 ..."');
        await waitForStatus(page, /turn 1/, '"↶ turn 1" after the capture');
        await checkNoErrorToasts(page);
    });

    await step('the agent changes 3 files; turnback: Mark Turn Finished from the palette', async () => {
        fs.writeFileSync(app, APP_AGENT);
        fs.writeFileSync(greeting, GREETING_AGENT);
        fs.rmSync(helpers);
        await expectEditorShows(page, APP_AGENT, "the agent's text (VS Code reloads it from disk)");
        await clearAllNotifications(page);
        await runCommand(page, 'turnback: Mark Turn Finished (Capture After)');
        await waitForToast(page, /turn 1 .* is finished/, '"turnback: turn 1 (...) is finished ..."');
        await checkNoErrorToasts(page);
    });

    await step('turnback: Undo Agent Turn: the files and the open editor go back', async () => {
        await clearAllNotifications(page);
        await runCommand(page, 'turnback: Undo Agent Turn');
        await untilFiles({ app, greeting, helpers }, [APP_BEFORE, undefined, HELPERS_BEFORE], 'the files on disk are not back to before the turn');
        await waitForToast(page, /Undid 1 turn/, '"Undid 1 turn ..."');
        await waitForStatus(page, /all undone.*↷1/, '"↶ all undone ↷1"');
        await expectEditorShows(page, APP_BEFORE, 'the original text after undo');
        await shot(page, 'clean-01-undo.png');
        await checkNoErrorToasts(page);
    });

    await step("turnback: Redo Agent Turn: the agent's version is back", async () => {
        await clearAllNotifications(page);
        await runCommand(page, 'turnback: Redo Agent Turn');
        await untilFiles({ app, greeting, helpers }, [APP_AGENT, GREETING_AGENT, undefined], "the files on disk are not the agent's again");
        await waitForToast(page, /Redid 1 turn/, '"Redid 1 turn ..."');
        await waitForStatus(page, /turn 1$/, '"↶ turn 1"');
        await expectEditorShows(page, APP_AGENT, "the agent's text after redo");
        await shot(page, 'clean-02-redo.png');
        await checkNoErrorToasts(page);
    });
}

// ---------------------------------------------------------------------------------------------

let exitCode = 0;
try {
    await main();
    console.log(`e2e: PASSED in ${((Date.now() - started) / 1000).toFixed(0)} s; screenshots in ${SHOTS}`);
} catch (error) {
    exitCode = 1;
    if (interrupted) {
        await cleanup();
        process.exit(130);
    }
    const where = error.step ? ` at step ${error.step}` : '';
    console.error(`e2e: FAILED${where}: ${error instanceof E2EError ? error.message : error.stack || error}`);
    await saveFailureState('failure').catch(() => undefined);
} finally {
    await cleanup();
    clearTimeout(watchdog);
}
process.exit(exitCode);
