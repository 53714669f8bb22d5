# hypre BoomerAMG hook libtilerap_hypre (included from Makefile.am).
