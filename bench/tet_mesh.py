#!/usr/bin/env python3
# A tetrahedral mesh of the unit cube for bench/petsc_gamg.sh, as a Gmsh 2.2
# ASCII .msh file: N^3 cubes, each cut into the 6 tetrahedra of Kuhn's split
# along its main diagonal (the same split in every cube, so faces match: a
# conforming mesh), one physical volume (tag 1), no boundary elements (SNES
# ex12 marks the boundary faces: -dm_plex_boundary_label marker).  Why:
# Debian's PETSc has no tetgen/ctetgen/triangle, so -dm_plex_simplex 1 cannot
# make a 3-D mesh, and PETSc's datafiles meshes cannot be downloaded here.  --order random
# numbers the nodes, orders the elements and each element's vertices at
# random (fixed seed), as an unstructured mesh generator could; --jitter F
# moves each interior node by up to F times the spacing in each coordinate
# (fixed seed), so the mesh is not a lattice.  Tetrahedra are positively
# oriented (Gmsh's convention, which PETSc's reader turns into its own).
#
#   bench/tet_mesh.py N OUT.msh [--order lex|random] [--jitter F]
import argparse, itertools, random

ap = argparse.ArgumentParser(description="Kuhn tetrahedral mesh of the unit cube, Gmsh 2.2")
ap.add_argument("n", type=int, help="cubes per side")
ap.add_argument("out", help="output .msh")
ap.add_argument("--order", choices=("lex", "random"), default="lex")
ap.add_argument("--jitter", type=float, default=0.2)
a = ap.parse_args()
N, M = a.n, a.n + 1
rng = random.Random(1973)

def vol(p, q, r, s):  # 6 times the signed volume
    u, v, w = [[b[d] - p[d] for d in range(3)] for b in (q, r, s)]
    return (u[0] * (v[1] * w[2] - v[2] * w[1]) - u[1] * (v[0] * w[2] - v[2] * w[0])
            + u[2] * (v[0] * w[1] - v[1] * w[0]))

# the 6 tets of the unit cube as corner offsets: from (0,0,0) to (1,1,1)
# one axis at a time, in each of the 6 axis orders; positive orientation
# decided on the undisturbed cube (odd axis orders come out negative)
kuhn = []
for perm in itertools.permutations(range(3)):
    c = [0, 0, 0]; t = [tuple(c)]
    for d in perm:
        c[d] = 1; t.append(tuple(c))
    if vol(*t) < 0: t[0], t[1] = t[1], t[0]
    kuhn.append(t)

xyz = []
for k in range(M):
    for j in range(M):
        for i in range(M):
            p = [i / N, j / N, k / N]
            if a.jitter and 0 < i < N and 0 < j < N and 0 < k < N:
                p = [x + rng.uniform(-a.jitter, a.jitter) / N for x in p]
            xyz.append(p)
ids = list(range(1, M ** 3 + 1))  # file id of lattice node g
tets = list(range(6 * N ** 3))     # tet index: cube * 6 + Kuhn tet
if a.order == "random":
    rng.shuffle(ids); rng.shuffle(tets)

with open(a.out, "w") as f:
    f.write("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n%d\n" % M ** 3)
    byid = [0] * M ** 3
    for g, n in enumerate(ids): byid[n - 1] = g
    f.writelines("%d %.17g %.17g %.17g\n" % (n + 1, *xyz[g]) for n, g in enumerate(byid))
    f.write("$EndNodes\n$Elements\n%d\n" % len(tets))
    for e, t in enumerate(tets, 1):
        cube, s = divmod(t, 6)
        i, j, k = cube % N, cube // N % N, cube // (N * N)
        v = [i + di + M * (j + dj + M * (k + dk)) for di, dj, dk in kuhn[s]]
        if a.order == "random":  # any vertex order, then the orientation put right
            rng.shuffle(v)
            if vol(*[[x // M ** d % M for d in range(3)] for x in v]) < 0: v[0], v[1] = v[1], v[0]
        if vol(*[xyz[g] for g in v]) <= 0:
            raise SystemExit("tet_mesh.py: tet %d inverted by --jitter %g, use less" % (e, a.jitter))
        f.write("%d 4 2 1 1 %d %d %d %d\n" % (e, *[ids[g] for g in v]))
    f.write("$EndElements\n")
