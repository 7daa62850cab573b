import sys, collections, gzip
src, dst = sys.argv[1:3]
c = collections.Counter()
for line in open(src):
    stack, _, n = line.rstrip().rpartition(" ")
    frames = []
    for f in stack.split(";"):
        name, _, where = f.partition(" (")
        frames.append(f"{name} ({where.split(':')[0].split('/')[-1]})")
    c[";".join(frames)] += int(n)
with gzip.open(dst, "wt") as out:
    for k, v in c.most_common():
        out.write(f"{k} {v}\n")
