-- Driver for tests/test_neovim.py: `nvim -c "lua dofile(<this file>)"`, run in the repo.
-- It works through the config's user commands and functions and writes one JSON line per
-- step to $TURNBACK_NVIM_OUT. At each checkpoint it waits for the Python test to answer
-- (a `<out>.<step>.ok` file): the test acts as the agent and checks the disk in between.
-- Every wait is bounded and Neovim quits in all paths, writing any error as a JSON line.
local out_path = os.getenv("TURNBACK_NVIM_OUT")
local out = assert(io.open(out_path, "w"))
local WAIT_MS = 20000

local function emit(step, data)
  data.step = step
  out:write(vim.fn.json_encode(data), "\n")
  out:flush()
end

-- Emits a step and waits until the Python side has handled it.
local function checkpoint(step, data)
  emit(step, data)
  local ok = out_path .. "." .. step .. ".ok"
  if not vim.wait(WAIT_MS, function() return vim.loop.fs_stat(ok) ~= nil end, 20) then
    error("no answer from the test at checkpoint " .. step, 0)
  end
end

local function read(path)
  local f = io.open(path, "rb")
  if not f then return vim.NIL end
  local text = f:read("*a")
  f:close()
  return text
end

local function buffer_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. "\n"
end

-- Runs a user command and returns what it said and how loudly (errors included).
local function said_by(command)
  local said, notify = {}, vim.notify
  vim.notify = function(msg, level) table.insert(said, { msg = msg, level = level or 0 }) end
  local ok, err = pcall(vim.cmd, command)
  vim.notify = notify
  if not ok then error(command .. ": " .. tostring(err), 0) end
  assert(#said == 1, command .. " said " .. #said .. " things")
  return said[1].msg, said[1].level >= vim.log.levels.ERROR
end

-- Runs a user command and returns what it told the user through vim.notify (not an error).
local function run(command)
  local msg, loud = said_by(command)
  if loud then error(command .. ": " .. msg, 0) end
  return msg
end

local function state(tb, buf)
  local list = tb.list()
  return {
    app = read("src/app.py"),
    new = read("src/new.py"),
    buffer = buffer_text(buf),
    modified = vim.bo[buf].modified,
    canUndo = list.canUndo,
    canRedo = list.canRedo,
    states = vim.tbl_map(function(t) return t.state end, list.turns),
  }
end

-- The "running" scenario: the test opened an agent turn with a hook and changed files
-- before Neovim started; :TurnbackUndo is refused, :TurnbackUndo! forces it.
local function running(tb)
  local msg, is_error = said_by("TurnbackUndo")
  emit("refused", { said = msg, error = is_error, app = read("src/app.py"), list = run("TurnbackList") })
  msg, is_error = said_by("TurnbackUndo!")
  emit("forced", { said = msg, error = is_error, app = read("src/app.py") })
end

-- The "rescue" scenario: an undone turn, the user's edit since, a forced redo over it;
-- :TurnbackRescue lists the overwritten edit and, given its id, puts it back.
local function rescue(tb, buf)
  run("TurnbackCapture rescue turn")
  checkpoint("captured", {}) -- the test plays the agent
  run("TurnbackUndo")
  checkpoint("undone", {}) -- the test plays the user, editing the file the turn changed
  local forced = run("TurnbackRedo!")
  local listed = run("TurnbackRescue")
  local id = listed:match("^(%x+)")
  local put_back = run("TurnbackRescue " .. tostring(id))
  emit("rescued", { forced = forced, listed = listed, said = put_back, app = read("src/app.py"),
    buffer = buffer_text(buf), modified = vim.bo[buf].modified })
end

local function main()
  local tb = require("turnback")
  tb.timeout = 15000
  vim.cmd("edit src/app.py") -- a buffer open while the agent works
  local buf = vim.api.nvim_get_current_buf()
  local client = vim.lsp.get_client_by_id(tb.client_id)
  assert(client, "the turnback client did not start")
  vim.wait(WAIT_MS, function() return client.initialized or client.is_stopped() end, 20)
  assert(client.initialized, "the server did not answer initialize")
  checkpoint("attached", {
    attached = vim.lsp.buf_is_attached(buf, tb.client_id),
    name = client.name,
    root = tb.root,
    cwd = vim.fn.getcwd(),
  })
  local scenario = os.getenv("TURNBACK_NVIM_SCENARIO")
  if scenario == "running" or scenario == "rescue" then
    if scenario == "running" then running(tb) else rescue(tb, buf) end
    vim.lsp.stop_client(tb.client_id)
    emit("stopped", { stopped = vim.wait(WAIT_MS, function() return client.is_stopped() end, 20) })
    return
  end

  local said = run("TurnbackCapture nvim turn")
  checkpoint("captured", { said = said }) -- the test now edits and creates files

  local list = tb.list()
  local turn = list.turns[1] or {}
  emit("listed", {
    count = #list.turns,
    label = turn.label,
    state = turn.state,
    turn = turn.turn,
    canUndo = list.canUndo,
    canRedo = list.canRedo,
    said = run("TurnbackList"),
  })

  local diff = tb.diff()
  local files = {}
  for _, f in ipairs(diff.files) do files[f.path] = f.status end
  local said_diff = run("TurnbackDiff")
  local diff_lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  local diff_ft = vim.bo.filetype
  vim.cmd("close") -- back to src/app.py
  emit("diffed", { files = files, said = said_diff, lines = diff_lines, filetype = diff_ft })

  said = run("TurnbackUndo")
  checkpoint("undone", vim.tbl_extend("force", state(tb, buf), { said = said }))

  said = run("TurnbackRedo")
  checkpoint("redone", vim.tbl_extend("force", state(tb, buf), { said = said }))

  -- A clean shutdown: the server answers shutdown/exit and the client goes away.
  vim.lsp.stop_client(tb.client_id)
  local stopped = vim.wait(WAIT_MS, function() return client.is_stopped() end, 20)
  emit("stopped", { stopped = stopped })
end

local ok, err = xpcall(main, function(e) return tostring(e) .. "\n" .. debug.traceback() end)
if not ok then emit("error", { error = err }) end
out:close()
vim.cmd(ok and "qa!" or "cquit 1")
