# PETSc matrix types MATSEQTILE / MATMPITILE (included from Makefile.am).
