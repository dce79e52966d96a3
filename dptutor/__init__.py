"""dptutor: the helper package behind the book *Getting differential privacy right in code*.

The book follows Habernal (ACL 2022), "How reparametrization trick broke
differentially-private text representation learning". Modules, one idea each:

- :mod:`dptutor.distributions`: Laplace pdf/cdf/ppf (Eq. 4, 5, 7), samplers; :mod:`dptutor.dptext`: DPText's
  transform (Eq. 9), its law and sampler.
- :mod:`dptutor.symbolic`: sympy derivations (CDF, inverse CDF, Theorem A.1, Theorems 3.1 and 3.2).
- :mod:`dptutor.mechanisms`: the mechanisms audited in the paper's Section 4; :mod:`dptutor.gaussian`: the
  Gaussian mechanism and its calibrations.
- :mod:`dptutor.epsilon`: what a value of epsilon means: the bound on any membership test, the posterior
  an attacker can reach, the interval a released count or mean should carry.
- :mod:`dptutor.composition`: sequential and parallel composition, a privacy budget that is spent.
- :mod:`dptutor.approximate_dp`: (epsilon, delta)-DP, the privacy-loss variable, Gaussian DP trade-offs;
  :mod:`dptutor.discrete_gaussian`: the discrete Gaussian mechanism, private as implemented.
- :mod:`dptutor.accounting`: composition theorems; :mod:`dptutor.renyi`: Renyi and zero-concentrated DP;
  :mod:`dptutor.pld`: privacy-loss distributions; :mod:`dptutor.amplification`: amplification by Poisson
  subsampling for pure and approximate DP.
- :mod:`dptutor.learning`: DP-SGD from scratch (per-example clipping, Poisson batches, Gaussian noise, the
  noise multiplier from the accountant); :mod:`dptutor.learning_variants`: the departures that break its
  accounting (shuffled batches, microbatches, the wrong normaliser); :mod:`dptutor.attacks`: membership
  inference and reconstruction.
- :mod:`dptutor.audit`: the empirical sanity check, exact closed forms and confidence bounds; ``audit_pair``,
  a sound lower bound on (epsilon, delta) for any mechanism and pair of datasets; ``audit_one_run``, a bound
  from one training run with canaries.
- :mod:`dptutor.zoo`: correct and buggy mechanisms from the literature, with claims and known true epsilon.
- :mod:`dptutor.experiments`: the paper-scale reproduction grid (its result files: :mod:`dptutor.grid_files`).
- :mod:`dptutor.reference`: the authors' published results, shipped as package data.
- :mod:`dptutor.plotting`: the book's figures.
- :mod:`dptutor.floating`: which doubles a floating-point Laplace sampler can output; the exact attack;
  :mod:`dptutor.ziggurat`: the same for numpy's ziggurat; :mod:`dptutor.snapping`: Mironov's snapping mechanism.
- :mod:`dptutor.exact`: exact discrete Laplace and discrete Gaussian sampling with integers;
  :mod:`dptutor.granular`: Google's granular Laplace.
- :mod:`dptutor.buglab`: minimal replicas of DP bugs reported in real libraries, each buggy and fixed.
- :mod:`dptutor.libraries`: OpenDP's and diffprivlib's Laplace mechanisms as ``mechanism(x, epsilon, rng)``.
- :mod:`dptutor.assignments`: the course assignments' checks, run in the student's kernel.
- :mod:`dptutor.course`: the grader (``python -m dptutor grade``), run only on the instructor's machine.
- :mod:`dptutor.cli`: ``python -m dptutor``.

Every public function checks its arguments with the helpers of :mod:`dptutor._validate` (a
``ValueError`` or ``TypeError`` that names the parameter).  Optional extras: ``dptutor[book]`` builds
the book, ``dptutor[test]`` runs the tests.
"""

__version__ = "0.1.0"
