-- Several requests, all or nothing. KEYS[i] is request i's key; ARGV = now
-- (-1: server TIME), ttl floor (ms), then per request six values: algorithm
-- (1 fixed_window, 2 sliding_log, 3 sliding_window, 4 token_bucket,
-- 5 leaky_bucket, as limit.Algorithm), cost, p1..p4. Returns the
-- decisions, seven values each, then now.
local algs = {fixed_window, nil, sliding_window, token_bucket, leaky_bucket}
local tnow = clock(ARGV[1])
local floor = tonumber(ARGV[2])
local pending, order, undos, out = {}, {}, {}, {}
local all = true
for i = 1, #KEYS do
  local j = 2 + (i - 1) * 6
  local alg, cost = tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2])
  local p1, p2, p3, p4 = tonumber(ARGV[j + 3]), tonumber(ARGV[j + 4]), tonumber(ARGV[j + 5]), tonumber(ARGV[j + 6])
  local key = KEYS[i]
  local d
  if alg == 2 then
    local u
    d, u = sliding_log(key, tnow, cost, p1, p2, tnow, floor)
    if u then undos[#undos + 1] = u end
  else
    local st = pending[key]
    if not st then
      st = load(key)
      if st.err then return st end
    end
    local nst
    nst, d = algs[alg](st, tnow, cost, false, p1, p2, p3, p4)
    if nst then
      if not pending[key] then order[#order + 1] = key end
      pending[key] = nst
    end
  end
  if d[1] == 0 then all = false end
  for k = 1, 7 do out[#out + 1] = d[k] end
end
if all then
  for _, key in ipairs(order) do save(key, pending[key], tnow, floor) end
else
  for i = #undos, 1, -1 do sliding_log_undo(undos[i], tnow, floor) end
end
out[#out + 1] = tnow
return out
