"""Intervals and tests computed from states: no second pass over the data.

- :mod:`.proportions`: Wilson and Clopper–Pearson intervals of proportion metrics;
- :mod:`.confusion`: caret's confusion-matrix statistics (accuracy interval, no-information
  rate and its binomial test, McNemar/Bowker, kappa's standard error);
- :mod:`.delong`: DeLong and Hanley–McNeil variances of AUCs from score histograms;
- :mod:`.compare`: paired DeLong tests of models on the same rows, unpaired ones of groups.
"""
