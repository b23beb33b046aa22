-- turnback for Neovim 0.7+: undo and redo an AI agent's turns through the turnback server.
-- A plugin: put editors/neovim on 'runtimepath' (a plugin manager, or a pack/*/start link),
-- then   require("turnback").setup({ cmd = { "turnback", "serve" } })
-- Commands: :TurnbackCapture [label]  :TurnbackUndo[!] [count]  :TurnbackRedo[!] [count]
-- (! forces: over conflicts, and over an agent turn that is still running)
--           :TurnbackList  :TurnbackDiff [turn]     Lua: require("turnback").undo(2), ...
--           :TurnbackRescue[!] [id]  lists what forced restores overwrote; with an id, puts
--           that version's files back (! over unsaved changes in the editor)
local M = { timeout = 30000 }

-- Attaches a buffer to the server when it shows a file inside the workspace.
local function attach(buf)
  if not M.client_id then return end -- the server did not start: setup said so once
  local name = vim.api.nvim_buf_get_name(buf)
  name = vim.loop.fs_realpath(name) or name
  if vim.bo[buf].buftype == "" and vim.startswith(name, M.root .. "/") then
    vim.lsp.buf_attach_client(buf, M.client_id)
  end
end

-- Re-reads unmodified buffers whose files changed on disk, without prompting. Before a
-- restore, so a stale buffer does not look like unsaved edits; after it, to show the result.
local function reload()
  local autoread = vim.go.autoread
  vim.go.autoread = true
  vim.cmd("silent! checktime")
  vim.go.autoread = autoread
end

-- client:fn(...) on Nvim 0.11+ (where client.fn(...) is deprecated), client.fn(...) before.
local function call(client, fn, ...)
  if vim.fn.has("nvim-0.11") == 1 then return client[fn](client, ...) end
  return client[fn](...)
end

-- Sends a custom request and waits for the answer; raises the server's error message.
function M.request(method, params)
  local client = M.client_id and vim.lsp.get_client_by_id(M.client_id)
  assert(client, "turnback: the server is not running (see :LspLog)")
  vim.wait(M.timeout, function() return client.initialized or call(client, "is_stopped") end, 10)
  local response, err = call(client, "request_sync", method, params or vim.empty_dict(), M.timeout)
  if not response or response.err then
    local why = response and response.err.message or err or "no answer"
    error(("turnback: %s: %s"):format(method, why), 0)
  end
  return response.result
end

local function params(key, value) -- a JSON object even when empty
  local p = vim.empty_dict()
  p[key] = value
  return p
end

function M.capture(label) return M.request("snapshot/capture", params("label", label)) end
function M.list() return M.request("snapshot/list") end
function M.diff(turn) return M.request("snapshot/diff", params("turn", turn)) end
function M.undo(count, force) return M.restore("snapshot/undo", count, force) end
function M.redo(count, force) return M.restore("snapshot/redo", count, force) end
-- `force` also overrides "turnRunning": an agent's turn still running (protocol.md).
function M.restore(method, count, force)
  reload()
  local p = params("count", count)
  if force then p.force = true end
  local result = M.request(method, p)
  reload()
  return result
end

-- Puts back a rescued version's files (protocol.md `snapshot/rescue`).
function M.rescue(id, force)
  reload()
  local p = params("id", id)
  if force then p.force = true end
  local result = M.request("snapshot/rescue", p)
  reload()
  return result
end

-- What each command does; the string it returns is shown to the user.
local function number(arg) return arg and (tonumber(arg) or error("not a number: " .. arg, 0)) end
local function restored(r)
  local lines = { r.message }
  for _, f in ipairs(r.files) do table.insert(lines, "  " .. f.action .. " " .. f.path) end
  for _, f in ipairs(r.kept) do
    local by = (type(f.by) == "string" and f.by ~= "") and (": " .. f.by) or ""
    table.insert(lines, ("  kept %s (%s%s)"):format(f.path, f.reason, by))
  end
  if r.agentHint then table.insert(lines, r.agentHint.message) end
  if r.rescued and r.turns then -- a forced undo or redo: what it overwrote, and how back
    table.insert(lines, ("Put them back with :TurnbackRescue %s"):format(r.rescued.id))
  end
  return table.concat(lines, "\n")
end
local commands = {
  TurnbackCapture = function(label)
    local t = M.capture(label)
    return ("Captured turn %d (%s) in session %s"):format(t.turn, t.id, t.session)
  end,
  TurnbackUndo = function(n, bang) return restored(M.undo(number(n), bang)) end,
  TurnbackRedo = function(n, bang) return restored(M.redo(number(n), bang)) end,
  TurnbackList = function()
    local lines = {}
    for _, t in ipairs(M.list().turns) do
      local line = ("%4d  %-6s  %s  %s"):format(t.turn, t.state, t.createdAt, t.label or "")
      table.insert(lines, t.progress == "running" and line .. "  (running)" or line)
    end
    return #lines > 0 and table.concat(lines, "\n") or "No turns yet"
  end,
  TurnbackRescue = function(id, bang)
    if id then return restored(M.rescue(id, bang)) end
    local lines = {}
    for _, v in ipairs(M.list().rescued or {}) do
      local files = table.concat(v.files, ", ")
      table.insert(lines, ("%s  %-16s  %s  %s"):format(v.id, v.reason, v.createdAt, files))
    end
    return #lines > 0 and table.concat(lines, "\n") or "No rescued versions"
  end,
  TurnbackDiff = function(turn) -- opens the turn's diff in a scratch buffer
    local r, lines = M.diff(tonumber(turn) or turn), {}
    for _, f in ipairs(r.files) do
      local name = f.oldPath ~= vim.NIL and f.oldPath and (f.oldPath .. " -> " .. f.path) or f.path
      if f.oldMode then name = ("%s (mode %s -> %s)"):format(name, f.oldMode, f.newMode) end
      local said = f.status .. " " .. name .. (f.binary and " (binary)" or "")
      local text = f.diff ~= "" and f.diff or said
      if f.diff ~= "" and (f.oldMode or (f.oldPath ~= vim.NIL and f.oldPath)) then
        text = said .. "\n" .. f.diff
      end
      vim.list_extend(lines, vim.split(text, "\n", { trimempty = true }))
    end
    vim.cmd("new")
    vim.bo.buftype, vim.bo.bufhidden, vim.bo.filetype = "nofile", "wipe", "diff"
    vim.api.nvim_buf_set_lines(0, 0, -1, false, lines)
    return ("Turn %d changed %d files"):format(r.turn.turn, #r.files)
  end,
}

-- Starts the server for this workspace and defines the commands. Options: `cmd` (the server
-- command, default vim.g.turnback_cmd or { "turnback", "serve" }), `timeout` (ms per request).
function M.setup(opts)
  opts = opts or {}
  M.timeout = opts.timeout or M.timeout
  -- The workspace is the git root of the current directory, else the directory itself.
  local git_root = vim.fn.systemlist({ "git", "rev-parse", "--show-toplevel" })[1]
  M.root = vim.v.shell_error == 0 and git_root or vim.loop.fs_realpath(vim.fn.getcwd())
  local cmd = opts.cmd or vim.g.turnback_cmd or { "turnback", "serve" }
  M.client_id = vim.lsp.start_client({ name = "turnback", cmd = cmd, root_dir = M.root })
  if not M.client_id then
    vim.notify(("turnback: could not start %q: install turnback (`pipx install .` in its clone)"
      .. " or pass setup({ cmd = ... })"):format(table.concat(cmd, " ")), vim.log.levels.ERROR)
  end
  local group = vim.api.nvim_create_augroup("turnback", { clear = true })
  local on_enter = function(e) attach(e.buf) end
  vim.api.nvim_create_autocmd("BufEnter", { group = group, callback = on_enter })
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) then attach(buf) end
  end
  for name, run in pairs(commands) do
    vim.api.nvim_create_user_command(name, function(o)
      local ok, text = pcall(run, o.args ~= "" and o.args or nil, o.bang)
      text = tostring(text):gsub("([Rr])etry with force", "%1etry with :" .. name .. "!")
      vim.notify(text, ok and vim.log.levels.INFO or vim.log.levels.ERROR)
    end, {
      nargs = name == "TurnbackList" and 0 or "?",
      bang = name:find("do$") ~= nil or name == "TurnbackRescue",
    })
  end
  return M
end

return M
