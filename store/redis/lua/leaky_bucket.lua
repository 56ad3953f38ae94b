-- leaky_bucket (nginx limit_req): p1 = interval t, p2 = burst, p3 = mode
-- (0 shape, 1 police), p4 = delay. A = excess, B = last update.
local function leaky_bucket(st, now, cost, force, t, burst, mode, delay)
  local level = -t
  if st[3] > 0 then level = math.max(st[1] - math.max(now - st[2], 0), -t) end
  local capacity = burst * t
  local limit = burst + 1
  local function remaining(l) return math.max(0, tdiv(capacity - l, t)) end
  local excess = 0
  if cost <= limit or force then excess = math.max(level + cost * t, 0) end
  if (cost > limit or excess > capacity) and not force then
    local reset, idle = 0, 0
    if level > -t then reset, idle = level + t, now + level + t end
    local retry = -1
    if cost <= limit then retry = math.max(excess - capacity, 1) end
    return nil, {0, remaining(level), reset, retry, 0, idle}
  end
  if cost == 0 then
    local reset, idle = 0, 0
    if level > -t then reset, idle = level + t, now + level + t end
    return nil, {1, remaining(level), reset, 0, 0, idle}
  end
  local idle = now + excess + t
  local dl = 0
  if mode == 0 and excess > delay * t then dl = excess - delay * t end
  return {excess, now, idle}, {1, remaining(excess), excess + t, 0, dl, idle}
end
