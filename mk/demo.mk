# `make demo`: the most complete real demonstration available (the broker one, until the
# operator's end-to-end demonstration lands and takes this over).
demo: demo-broker
