-- lua_breaker.lua - what an operator would write instead of an SPOE agent:
-- a consecutive-failure breaker per backend/server, inside HAProxy.
--
--     global
--         lua-load lua_breaker.lua
--     frontend www
--         http-response lua.breaker_observe
--
-- Three 5xx in a row open a server's breaker for 30 s, then one response
-- decides (a success closes it, a failure opens it again). It sets
-- txn.breaker.state like the agent does; acting on HAProxy (draining the
-- server) is left out, as the benchmark measures the per-response cost.
-- State is per process: with nbthread 1, no locking is needed.

local THRESHOLD = 3
local COOLDOWN_S = 30

local breakers = {}

local function observe(txn)
	local key = txn.sf:be_name() .. "/" .. (txn.sf:srv_name() or "")
	local status = txn.sf:status() or 0
	local b = breakers[key]
	if b == nil then
		b = { state = "closed", streak = 0, opened_at = 0 }
		breakers[key] = b
	end
	local now = core.now().sec
	if b.state == "open" and now - b.opened_at >= COOLDOWN_S then
		b.state = "half_open"
	end
	if status >= 500 then
		b.streak = b.streak + 1
		if b.state == "half_open" or (b.state == "closed" and b.streak >= THRESHOLD) then
			b.state = "open"
			b.opened_at = now
		end
	else
		b.streak = 0
		if b.state == "half_open" then
			b.state = "closed"
		end
	end
	txn:set_var("txn.breaker.state", b.state)
end

core.register_action("breaker_observe", { "http-res" }, observe, 0)
