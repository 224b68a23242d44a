-- Argo CD health check for bookie-fleet.dev/BookieCluster, read from the conditions the operator writes
-- (docs/operator.md, "GitOps"). Lua 5.1 with the base and table libraries only, as Argo CD runs it without
-- resource.customizations.useOpenLibs.
--
--   Degraded     Degraded=True (an invalid spec, bookies that cannot start, too few writable bookies,
--                under-replicated ledgers, ...) or DataLoss=True (the last audit found entries with no replica)
--   Suspended    Decommissioning=True: a bookie is leaving through the safe decommission, which waits on
--                autorecovery's re-replication before the cluster shrinks; or a long operation held until the
--                user lets it go on: an adoption awaiting spec.adopt.approve (Adopting=True AwaitingApproval),
--                an implementation switch paused by spec.implementationSwitch.paused
--                (status.implementationSwitch.phase Paused), a rebalance paused by spec.rebalance.paused
--                (status.rebalance.phase Paused)
--   Progressing  the operator has not seen this generation of the spec yet, Progressing=True (creating,
--                scaling, a rolling restart, a compaction run), Ready=False, or anything this script does
--                not know (a status it cannot read is never Healthy)
--   Healthy      Ready=True and nothing in progress
local hs = {}
hs.status = "Progressing"
hs.message = "Waiting for the operator to report the cluster's conditions"

local function condition(conditions, wanted)
  for _, c in ipairs(conditions) do
    if type(c) == "table" and c.type == wanted then
      return c
    end
  end
  return nil
end

local function is_true(c)
  return c ~= nil and c.status == "True"
end

local function describe(c)
  local reason = tostring(c.reason or c.type)
  if type(c.message) == "string" and c.message ~= "" then
    return reason .. ": " .. c.message
  end
  return reason
end

if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  hs.message = "Being deleted"
  return hs
end
local status = obj.status
if type(status) ~= "table" or type(status.conditions) ~= "table" then
  return hs
end
local generation = obj.metadata and obj.metadata.generation
if type(generation) == "number" and (type(status.observedGeneration) ~= "number"
    or status.observedGeneration < generation) then
  hs.message = "Waiting for the operator to reconcile generation " .. generation
  return hs
end

local conditions = status.conditions
local degraded = condition(conditions, "Degraded")
if is_true(degraded) then
  hs.status = "Degraded"
  hs.message = describe(degraded)
  return hs
end
local data_loss = condition(conditions, "DataLoss")
if is_true(data_loss) then
  hs.status = "Degraded"
  hs.message = describe(data_loss)
  return hs
end
local decommissioning = condition(conditions, "Decommissioning")
if is_true(decommissioning) then
  hs.status = "Suspended"
  hs.message = "Decommissioning " .. describe(decommissioning)
  return hs
end
local adopting = condition(conditions, "Adopting")
if is_true(adopting) and adopting.reason == "AwaitingApproval" then
  hs.status = "Suspended"
  hs.message = describe(adopting)
  return hs
end
local switch = status.implementationSwitch
if type(switch) == "table" and switch.phase == "Paused" then
  local done = type(switch.converted) == "table" and #switch.converted or 0
  local left = type(switch.remaining) == "table" and #switch.remaining or 0
  hs.status = "Suspended"
  hs.message = "ImplementationSwitchPaused: " .. tostring(switch.source) .. " to " .. tostring(switch.target)
    .. ", " .. done .. " switched, " .. left .. " to go: " .. tostring(switch.message or "")
  return hs
end
local rebalance = status.rebalance
if type(rebalance) == "table" and rebalance.phase == "Paused" then
  hs.status = "Suspended"
  hs.message = "RebalancePaused: " .. tostring(rebalance.message or "")
  return hs
end
local progressing = condition(conditions, "Progressing")
if is_true(progressing) then
  hs.message = describe(progressing)
  return hs
end
local ready = condition(conditions, "Ready")
if ready == nil then
  return hs
end
if ready.status == "True" then
  hs.status = "Healthy"
  hs.message = describe(ready)
  return hs
end
hs.message = describe(ready)
return hs
