-- tollgate: token_bucket (GCRA) for several requests in one call: the
-- decisions that arrived while the store's calls were in flight (batch.go).
-- Each is decided, and saved when it admits, before the next, as one
-- Apply after another would be; the arithmetic is token_bucket_one.lua's,
-- written out in the loop (no closures, one call's overhead for all). KEYS[i]
-- is request i's key; ARGV = now in µs (-1: server TIME), TTL floor (ms),
-- then three values per request: cost, emission interval t (µs), burst b.
-- Returns seven values per request, then now. A key holding something else
-- than a token bucket's state is decided by nobody: its first value is -1
-- (the store answers it by the failure mode), and the others go on.
local now = tonumber(ARGV[1])
if now < 0 then
  local tm = redis.call('TIME')
  now = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
end
local floor = tonumber(ARGV[2])
local out = {}
local o = 0
for i = 1, #KEYS do
  local j = 3 * i
  local cost, t, b = tonumber(ARGV[j]), tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2])
  local key = KEYS[i]
  local stored = 0
  local v = redis.pcall('GET', key) -- a key of another type: an error table
  if v then
    if type(v) == 'table' then stored = nil else stored = tonumber(v) end
  end
  if not stored then
    out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5], out[o + 6], out[o + 7] = -1, 0, 0, 0, 0, 0, 0
  else
    local tau = t * b
    local tat = stored
    if tat < now then tat = now end
    local idle = 0
    if tat > now then idle = tat end
    local allowed, x, retry = 1, tat, 0
    if cost > 0 then
      if cost > b then
        allowed, retry = 0, -1
      else
        local allow_at = tat + t * cost - tau
        if now < allow_at then allowed, retry = 0, allow_at - now end
      end
      if allowed == 1 then
        x = tat + t * cost
        idle = x
        local ms = math.floor((x - now + 999) / 1000)
        if ms < floor then ms = floor end
        if ms < 1 then ms = 1 end
        redis.call('SET', key, string.format('%d', x), 'PX', string.format('%d', ms))
      end
    end
    -- remaining at TAT x: max(0, (tau - (x - now)) / t), exactly; with none
    -- left, the wait for one unit, until x - tau + t
    local r, nx = 0, 0
    local n = tau - (x - now)
    if n >= t then
      r = math.floor(n / t)
      local m = n - r * t
      if m < 0 then r = r - 1 elseif m >= t then r = r + 1 end
    else
      nx = x - tau + t - now
    end
    out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5], out[o + 6], out[o + 7] = allowed, r, x - now, retry, 0, idle, nx
  end
  o = o + 7
end
out[o + 1] = now
return out
