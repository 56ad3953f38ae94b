-- leaky_bucket (nginx limit_req): p1 = interval t, p2 = burst, p3 = mode
-- (0 shape, 1 police), p4 = delay. A = excess, B = last update.
local function leaky_bucket(st, now, cost, force, t, burst, mode, delay)
  local level = -t
  if st[3] > 0 then level = math.max(st[1] - math.max(now - st[2], 0), -t) end
  local capacity = burst * t
  local limit = burst + 1
  -- remaining above level l, and the wait until it drains to capacity - t
  -- when none is left
  local function remaining(l)
    local r = math.max(0, tdiv(capacity - l, t))
    if r > 0 then return r, 0 end
    return 0, l - (capacity - t)
  end
  local excess = 0
  if cost <= limit or force then excess = math.max(level + cost * t, 0) end
  if (cost > limit or excess > capacity) and not force then
    local reset, idle = 0, 0
    if level > -t then reset, idle = level + t, now + level + t end
    local retry = -1
    if cost <= limit then retry = math.max(excess - capacity, 1) end
    local r, nx = remaining(level)
    return nil, {0, r, reset, retry, 0, idle, nx}
  end
  if cost == 0 then
    local reset, idle = 0, 0
    if level > -t then reset, idle = level + t, now + level + t end
    local r, nx = remaining(level)
    return nil, {1, r, reset, 0, 0, idle, nx}
  end
  local idle = now + excess + t
  local dl = 0
  if mode == 0 and excess > delay * t then dl = excess - delay * t end
  local r, nx = remaining(excess)
  return {excess, now, idle}, {1, r, excess + t, 0, dl, idle, nx}
end
