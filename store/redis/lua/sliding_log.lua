-- sliding_log: p1 = limit, p2 = window. The key is a list
-- [sum, at1, cost1, at2, cost2, ...], oldest first, holding the admitted
-- requests still inside the window and the sum of their costs.

-- sl_wait is the time until need (> 0) units of cost have left the window
-- of the log at key: the oldest entries leave first, each w after it came.
local function sl_wait(key, need, now, w)
  local k = 0
  while need > 0 do
    local chunk = redis.call('LRANGE', key, 2 * k + 1, 2 * k + 128)
    local i = 1
    while i < #chunk do
      need = need - tonumber(chunk[i + 1])
      if need <= 0 then return math.max(tonumber(chunk[i]) + w - now, 1) end
      i = i + 2
    end
    k = k + 64
    if #chunk < 128 then break end
  end
  return 0
end

-- sliding_log returns the decision and, when it charged, an undo record.
local function sliding_log(key, now, cost, limit, w, tnow, floor)
  local n = redis.call('LLEN', key)
  local sum, newest = 0, 0
  if n > 0 then
    sum = tonumber(redis.call('LINDEX', key, 0))
    newest = tonumber(redis.call('LINDEX', key, -2))
    if newest > now then now = newest end -- the clock went back: clamp
    -- Forget the entries at or before now - w, reading in chunks.
    local cutoff, k, done = now - w, 0, false
    while not done and 2 * k + 1 < n do
      local chunk = redis.call('LRANGE', key, 2 * k + 1, 2 * k + 128)
      local i = 1
      while i < #chunk do
        if tonumber(chunk[i]) > cutoff then done = true break end
        sum = sum - tonumber(chunk[i + 1])
        k = k + 1
        i = i + 2
      end
      if #chunk < 128 then break end
    end
    if k > 0 then
      if 2 * k + 1 >= n then
        redis.call('DEL', key)
        n, sum, newest = 0, 0, 0
      else
        redis.call('LTRIM', key, 2 * k, -1)
        redis.call('LSET', key, 0, fmt(sum))
        n = n - 2 * k
      end
    end
  end
  local d = {0, 0, 0, 0, 0, 0, 0}
  local undo = nil
  if cost <= limit - sum then
    d[1] = 1
    if cost > 0 then
      undo = {key, n, sum, newest, w}
      if n == 0 then
        redis.call('RPUSH', key, fmt(cost), fmt(now), fmt(cost))
      else
        redis.call('RPUSH', key, fmt(now), fmt(cost))
        redis.call('LSET', key, 0, fmt(sum + cost))
      end
      sum, newest, n = sum + cost, now, n + 2
      redis.call('PEXPIRE', key, fmt(ttl_ms(newest + w, tnow, floor)))
    end
  elseif cost > limit then
    d[4] = -1
  else
    d[4] = sl_wait(key, sum + cost - limit, now, w)
  end
  d[2] = math.max(0, limit - sum)
  if d[2] == 0 then d[7] = sl_wait(key, sum + 1 - limit, now, w) end
  if n > 0 then
    d[6] = newest + w
    d[3] = untl(d[6], now)
  end
  return d, undo
end

-- sliding_log_undo takes back the charge recorded by undo.
local function sliding_log_undo(u, tnow, floor)
  local key, n, sum, newest, w = u[1], u[2], u[3], u[4], u[5]
  if n == 0 then
    redis.call('DEL', key)
    return
  end
  redis.call('RPOP', key)
  redis.call('RPOP', key)
  redis.call('LSET', key, 0, fmt(sum))
  redis.call('PEXPIRE', key, fmt(ttl_ms(newest + w, tnow, floor)))
end
