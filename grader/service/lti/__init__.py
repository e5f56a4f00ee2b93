"""LTI 1.3 on the service's floor: the tool's keys and the registered platforms (`keys`), who a launch is and for
which LMS course (`courses`), the checked launch (`launch`), its pages (`pages`), grades back and the roster in
(`services`), and what `grader lti ...` prints (`commands`)."""
