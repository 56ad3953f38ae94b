-- One request: KEYS[1]; ARGV = now (-1: server TIME), ttl floor (ms),
-- cost, force (0/1), p1..p4. ALGORITHM is replaced by the algorithm's name.
local tnow = clock(ARGV[1])
local floor = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local force = ARGV[4] == '1'
local p1, p2, p3, p4 = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local d
if IS_LOG then
  d = sliding_log(KEYS[1], tnow, cost, p1, p2, tnow, floor)
else
  local st = load(KEYS[1])
  if st.err then return st end
  local nst
  nst, d = ALGORITHM(st, tnow, cost, force, p1, p2, p3, p4)
  if nst then save(KEYS[1], nst, tnow, floor) end
  if force then
    if not nst then nst = st end
    return {d[1], d[2], d[3], d[4], d[5], d[6], d[7], nst[1], nst[2], nst[3], tnow}
  end
end
d[8] = tnow
return d
