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
-- txn.breaker.state like the agent does. With BREAKER_LUA_DRAIN=1 in
-- HAProxy's environment it also drains an open server and readies it when
-- the cool-down ends (a task looks every 500 ms), as `make bench-fleet`
-- runs it; `make bench` leaves that out, as it measures the per-response
-- cost. It sees only the responses that reach http-response: HAProxy's own
-- 502/503/504 (a refused connection, a timeout) never do. State is per
-- process: with nbthread 1, no locking is needed.

local THRESHOLD = 3
local COOLDOWN_S = 30
local DRAIN = os.getenv("BREAKER_LUA_DRAIN") == "1"

local breakers = {}

local function server_of(key)
	local be, srv = key:match("^([^/]+)/(.+)$")
	local proxy = be and core.backends[be]
	return proxy and proxy.servers[srv]
end

local function open(key, b, now)
	b.state = "open"
	b.opened_at = now
	if DRAIN then
		local s = server_of(key)
		if s then s:set_drain() end
	end
end

local function observe(txn)
	local key = txn.sf:be_name() .. "/" .. (txn.sf:srv_name() or "")
	-- The sample fetch returns the status as a string.
	local status = tonumber(txn.sf:status()) or 0
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
			open(key, b, now)
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

-- A drained server gets no response to half-open it: the cool-down's end
-- readies it, and its next response decides.
if DRAIN then
	core.register_task(function()
		while true do
			core.msleep(500)
			local now = core.now().sec
			for key, b in pairs(breakers) do
				if b.state == "open" and now - b.opened_at >= COOLDOWN_S then
					b.state = "half_open"
					local s = server_of(key)
					if s then s:set_ready() end
				end
			end
		end
	end)
end
