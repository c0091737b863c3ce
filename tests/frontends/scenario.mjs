// Runs the scenario named on the command line, printing what it returned as JSON (what the
// application saw); a scenario that throws, or an unknown name, exits non-zero.
export async function runScenario(scenarios) {
  const name = process.argv[2];
  const scenario = scenarios[name];
  if (!scenario) {
    console.error(`no scenario ${name}`);
    process.exit(2);
  }
  try {
    console.log(JSON.stringify(await scenario()));
  } catch (error) {
    console.error(error);
    process.exit(1);
  }
}
