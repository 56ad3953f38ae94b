-- tollgate: token_bucket (GCRA) for one request, written out in one piece:
-- the algorithm most deployments use, so its script creates no helper
-- closures (a fifth of the generic script's server time). It computes
-- exactly what token_bucket.lua computes (the differential tests hold both
-- to package limit). KEYS[1]; ARGV = now in µs (-1: server TIME), TTL
-- floor (ms), cost, force (0/1), emission interval t (µs), burst b.
local now = tonumber(ARGV[1])
if now < 0 then
  local tm = redis.call('TIME')
  now = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
end
local floor, cost, force = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4] == '1'
local t, b = tonumber(ARGV[5]), tonumber(ARGV[6])
local stored = 0
local v = redis.call('GET', KEYS[1])
if v then
  stored = tonumber(v)
  if not stored then return redis.error_reply('tollgate: key ' .. KEYS[1] .. ' holds no token bucket state') end
end
local tau = t * b
local tat = stored
if tat < now then tat = now end
-- rem is max(0, (tau - (x - now)) / t) as in Go, exactly: a state charged
-- beyond the burst (by Sync) has nothing left, never a negative count.
local function rem(x)
  local n = tau - (x - now)
  if n < t then return 0 end
  local q = math.floor(n / t)
  local r = n - q * t
  if r < 0 then q = q - 1 elseif r >= t then q = q + 1 end
  return q
end
-- With none left (rem 0: TAT - tau + t > now), nx is the wait for one
-- unit, until TAT - tau + t.
local idle = 0
if tat > now then idle = tat end
if cost == 0 then
  local r, nx = rem(tat), 0
  if r == 0 then nx = tat - tau + t - now end
  if force then return {1, r, tat - now, 0, 0, idle, nx, stored, 0, stored, now} end
  return {1, r, tat - now, 0, 0, idle, nx, now}
end
if not force then
  local retry = -1
  if cost <= b then
    local allow_at = tat + t * cost - tau
    if now >= allow_at then retry = 0 else retry = allow_at - now end
  end
  if retry ~= 0 then
    local r, nx = rem(tat), 0
    if r == 0 then nx = tat - tau + t - now end
    return {0, r, tat - now, retry, 0, idle, nx, now}
  end
end
local ntat = tat + t * cost
local ms = ntat - now
ms = math.floor((ms + 999) / 1000)
if ms < floor then ms = floor end
if ms < 1 then ms = 1 end
redis.call('SET', KEYS[1], string.format('%d', ntat), 'PX', string.format('%d', ms))
local r, nx = rem(ntat), 0
if r == 0 then nx = ntat - tau + t - now end
if force then return {1, r, ntat - now, 0, 0, ntat, nx, ntat, 0, ntat, now} end
return {1, r, ntat - now, 0, 0, ntat, nx, now}
