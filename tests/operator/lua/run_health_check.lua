-- Runs an Argo CD health check as Argo CD does: the object in the global obj, the health the script's return
-- value, and (without useOpenLibs) only the base and table libraries in reach: no string, os, io or math
-- library, and no string methods.
-- Usage: lua5.1 run_health_check.lua <health.lua> <object.json>   -> {"status": ..., "message": ...} on stdout
local cjson = require("cjson")
local script, object = arg[1], arg[2]
local file = assert(io.open(object, "r"))
local body = file:read("*a")
file:close()

local env = {
  obj = cjson.decode(body),
  assert = assert, error = error, ipairs = ipairs, next = next, pairs = pairs, pcall = pcall, select = select,
  tonumber = tonumber, tostring = tostring, type = type, unpack = unpack, table = table,
}
local check = assert(loadfile(script))
setfenv(check, env)
local string_methods = getmetatable("").__index
getmetatable("").__index = {}
local ok, hs = pcall(check)
getmetatable("").__index = string_methods
if not ok then
  io.stderr:write(tostring(hs), "\n")
  os.exit(2)
end
io.write(cjson.encode({status = hs.status, message = hs.message}), "\n")
