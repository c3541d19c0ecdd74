#include "diagnose/job_report.h"

#include <catch2/catch.hpp>

#include "diagnose/engine.h"
#include "diagnose/flight_recorder/analysis.h"
#include "diagnose/ingest.h"

using namespace sl::diagnose;

TEST_CASE("the job page built from Flight Recorder dumps alone names the dumps it read") {
  DiagnoseRun run;
  run.diagnosis = Diagnose(Evidence());
  run.read.inputs = {"runs/job7"};
  fr::FrAnalysis a;
  for (int r = 0; r < 2; ++r) {
    fr::RankDump d;
    d.rank = r;
    d.file = "runs/job7/n1/bundle/fr/rank" + std::to_string(r);
    a.dumps.push_back(std::move(d));
  }
  const std::string html = JobDiagnosisHtml(run, &a);
  CHECK(html.find("0 file(s)") == std::string::npos);
  CHECK(html.find("2 Flight Recorder dump(s): rank 0 <code>runs/job7/n1/bundle/fr/rank0</code>, "
                  "rank 1 <code>runs/job7/n1/bundle/fr/rank1</code>") != std::string::npos);
  CHECK(html.find("from <code>runs/job7</code>") != std::string::npos);
}

TEST_CASE("the job page counts log files and lines, and the lines counted once") {
  DiagnoseRun run;
  run.diagnosis = Diagnose(Evidence());
  run.read.files = 3;
  run.read.lines = 120;
  run.read.duplicate_lines = 4;
  const std::string html = JobDiagnosisHtml(run, nullptr);
  CHECK(html.find("Read 3 log file(s), 120 line(s), 0 recognised (4 repeated in another file of "
                  "the same node, counted once)") != std::string::npos);
}
